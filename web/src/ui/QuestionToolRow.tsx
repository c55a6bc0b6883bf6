// The ask_user_question row of the transcript (P5), composed as a row of
// its own: the generic tool row has no action hook. Its state comes from
// toolRowState; its actions show the card again (P4), expand the
// submitted or recorded answers in place, read-only, or discard a queued
// reply, which makes the question answerable again.

import { useState } from "preact/hooks";
import type { QuestionCards } from "../questions";
import { shown, Text } from "../questions/text";
import { toolRowState } from "../questions/toolRow";
import type { ToolRow } from "../transcript/model";
import type { View } from "../wire";
import { AnswerList } from "./AnswerList";
import { useId, useTicker } from "./hooks";

export function QuestionToolRow({ row, session, view, cards }: { row: ToolRow; session: string; view: View | undefined; cards: QuestionCards }) {
  const key = cards.keyFor(session, row.callId);
  const card = cards.get(key);
  const hidden = card !== undefined && !card.visible && card.live;
  useTicker(hidden && card?.countdown?.phase === "running");
  const [open, setOpen] = useState(false);
  const listId = useId("row-answers");
  const state = toolRowState({ callId: row.callId, questions: row.questions ?? [], view, result: row.result, turnEnded: row.turnEnded, panelHidden: hidden });
  const questions = row.questions ?? [];
  const expands = state.action === "view-answers" || state.action === "view";

  const act = () => {
    if (expands) {
      setOpen(!open);
      return;
    }
    cards.open(key);
    requestAnimationFrame(() => document.querySelector(`section[data-card-key="${CSS.escape(key)}"]`)?.scrollIntoView({ block: "nearest" }));
  };
  return (
    <div class={`row tool question-row state-${state.kind}`} data-call-id={row.callId} data-state={state.kind}>
      <div class="tool-line">
        <code class="tool-name">{row.name}</code>
        {row.parentCallId && <span class="via">via run_code</span>}
        <span class="q-summary">
          {shown(questions[0]?.question ?? "")}
          {questions.length > 1 ? ` (+${questions.length - 1} more)` : ""}
        </span>
      </div>
      <div class="tool-state">
        <span class="state-label">{state.label}</span>
        {hidden && card?.countdown?.label && <span class="countdown">{card.countdown.label}</span>}
        {state.action && (
          <button
            type="button"
            class={`row-action action-${state.action}`}
            disabled={!expands && !card}
            aria-expanded={expands ? open : undefined}
            aria-controls={expands ? listId : undefined}
            onClick={act}
          >
            {expands && open ? Text.hideAnswers : state.actionLabel}
          </button>
        )}
        {state.discardable && card && (
          <button type="button" class="row-action action-discard" disabled={card.discarding} onClick={() => void cards.discardQueued(key)}>
            {card.discarding ? Text.discarding : Text.discardReply}
          </button>
        )}
      </div>
      {state.discardable && card?.message && (
        <p class="row-message" role="alert">
          {card.message}
        </p>
      )}
      {open && state.items && <AnswerList id={listId} items={state.items} label={state.kind === "queued" ? Text.rowQueued : state.label} />}
    </div>
  );
}
