// The question card: the panel a person answers in. It renders a CardView
// and sends every action to QuestionCards; what an action means (an edit
// freezes the countdown, a submission goes through the card's channel,
// hiding sends nothing) is decided there, not here.

import { useEffect, useRef, useState } from "preact/hooks";
import type { JSX } from "preact";
import type { CardView, QuestionCards } from "../questions";
import { advancesOnEnter, announcement, firstProblem, keysHint, optionForKey, planReview, questionProblem, type PlanReview } from "../questions/form";
import { shown, Text } from "../questions/text";
import type { Question } from "../wire";
import { useId, useStable, useTicker } from "./hooks";
import { Markdown } from "./MarkdownView";

export function QuestionCard({ cardKey, cards }: { cardKey: string; cards: QuestionCards }) {
  const card = cards.get(cardKey);
  useTicker(card?.countdown?.phase === "running");
  const root = useRef<HTMLElement>(null);
  const focused = useRef(false);
  const autofocused = useRef(false);
  const titleId = useId("card-title");

  // A card that unmounts while focused must not leave its countdown paused.
  useEffect(() => () => {
    if (focused.current) cards.blur(cardKey);
  }, [cards, cardKey]);

  // P3: move focus in only when the channel is ready, no countdown runs and the card is not locked.
  useEffect(() => {
    if (!card?.autofocus || autofocused.current) return;
    autofocused.current = true;
    firstControl(root.current)?.focus();
  }, [card?.autofocus]);

  if (!card) return null;
  const plan = planReview(card.intent, card.questions);
  const keyed = card.callId !== undefined;
  const phase = card.countdown?.phase;

  const hide = () => {
    // Hiding keeps the claim and the countdown running (P4): let go of the pause first.
    focused.current = false;
    cards.blur(cardKey);
    cards.dismiss(cardKey);
  };
  const onFocusIn = () => {
    focused.current = true;
    cards.focus(cardKey);
  };
  const onFocusOut = (e: FocusEvent) => {
    const next = e.relatedTarget;
    if (next instanceof Node && root.current?.contains(next)) return;
    focused.current = false;
    cards.blur(cardKey);
  };
  const onKeyDown = (e: KeyboardEvent) => {
    if (e.key === "Escape" && keyed) {
      e.preventDefault();
      hide();
    }
  };

  return (
    <section
      ref={root}
      class={`card${card.busy ? " busy" : ""}${plan ? " plan-card" : ""}`}
      role="region"
      aria-labelledby={titleId}
      aria-busy={card.busy}
      data-card-key={card.key}
      data-call-id={card.callId}
      data-channel={card.channel}
      data-phase={phase}
      onFocusIn={onFocusIn}
      onFocusOut={onFocusOut}
      onKeyDown={onKeyDown}
    >
      <header class="card-head">
        <div class="title-line">
          <h2 id={titleId}>{plan ? Text.planTitle : Text.cardTitle}</h2>
          <Countdown card={card} />
        </div>
        <div class="head-actions">
          {(phase === "running" || phase === "paused" || phase === "awaiting-handshake") && (
            <button type="button" class="take-time" onClick={() => cards.takeTime(cardKey)}>
              {Text.takeTime}
            </button>
          )}
          {keyed ? (
            <button type="button" class="hide" onClick={hide}>
              {Text.hide}
            </button>
          ) : (
            <button type="button" class="dismiss-all" onClick={() => cards.dismiss(cardKey)}>
              {Text.dismissAll}
            </button>
          )}
        </div>
      </header>
      {card.notice && <p class="notice">{card.notice}</p>}
      {card.hint && <p class="hint">{card.hint}</p>}
      {card.message && (
        <p class="message" role="alert">
          {card.message}
        </p>
      )}
      {plan ? <PlanPanel card={card} cards={cards} plan={plan} /> : <Questions card={card} cards={cards} root={root} />}
    </section>
  );
}

/** The countdown's words, and a polite live region that speaks only when its phase or the notice changes. */
function Countdown({ card }: { card: CardView }) {
  const c = card.countdown;
  const spoken = useStable(`${c?.phase ?? ""}|${card.notice ?? ""}`, () => announcement(c?.phase, c?.remainingMs, card.notice));
  return (
    <>
      {c?.label && (
        <span class="countdown" data-phase={c.phase} aria-hidden="true">
          {c.label}
        </span>
      )}
      <span class="sr-only" role="status" aria-live="polite" aria-atomic="true">
        {spoken}
      </span>
    </>
  );
}

function Questions({ card, cards, root }: { card: CardView; cards: QuestionCards; root: { current: HTMLElement | null } }) {
  const [flagged, setFlagged] = useState<string | undefined>(undefined);
  const moveFocus = useRef(false);
  const ids = useId("q");
  const total = card.questions.length;
  const page = Math.min(card.page, total - 1);
  const question = card.questions[page] as Question;
  const answer = card.draft[question.id] ?? { selected: [], custom: "" };
  const problem = flagged === question.id ? questionProblem(question, answer) : undefined;
  const last = page === total - 1;

  // After Enter moved to the next question, focus follows it.
  useEffect(() => {
    if (!moveFocus.current) return;
    moveFocus.current = false;
    firstControl(root.current)?.focus();
  }, [page]);

  const go = (to: number) => {
    setFlagged(undefined);
    cards.setPage(card.key, to);
  };
  const submitAll = () => {
    const bad = firstProblem(card.questions, card.draft);
    if (bad >= 0) {
      cards.setPage(card.key, bad);
      setFlagged(card.questions[bad]?.id);
      return;
    }
    void cards.submit(card.key);
  };
  const advance = () => {
    if (questionProblem(question, answer)) {
      setFlagged(question.id);
      return;
    }
    if (last) {
      submitAll();
      return;
    }
    moveFocus.current = true;
    go(page + 1);
  };
  const skip = () => {
    cards.skip(card.key, question.id);
    if (!last) go(page + 1);
  };
  const onKeyDown = (e: JSX.TargetedKeyboardEvent<HTMLElement>) => {
    if (!advancesOnEnter(e) || e.target instanceof HTMLButtonElement) return;
    e.preventDefault();
    advance();
  };
  // 1–9 choose (or toggle) an option from anywhere in the card but its text box.
  const onCardKeyDown = (e: JSX.TargetedKeyboardEvent<HTMLElement>) => {
    const label = optionForKey(e, question, e.target instanceof HTMLTextAreaElement || (e.target instanceof HTMLInputElement && e.target.type === "text"));
    if (label === undefined || card.locked) return;
    e.preventDefault();
    cards.select(card.key, question.id, label);
    root.current?.querySelector<HTMLInputElement>(`.question input[value="${CSS.escape(label)}"]`)?.focus();
  };

  const multi = question.multiSelect === true;
  const options = question.options ?? [];
  const detailId = question.detail ? `${ids}-detail` : undefined;
  const problemId = `${ids}-problem`;
  return (
    <div class="questions" onKeyDown={onCardKeyDown}>
      {total > 1 && (
        <nav class="pager" aria-label="Questions">
          <ol>
            {card.questions.map((q, i) => {
              const done = questionProblem(q, card.draft[q.id]) === undefined;
              return (
                <li key={q.id}>
                  <button
                    type="button"
                    class={`page${done ? " done" : ""}`}
                    aria-current={i === page ? "step" : undefined}
                    aria-label={`${Text.questionOf(i, total)}: ${shown(q.header ?? q.question)}${done ? " (answered)" : ""}`}
                    onClick={() => go(i)}
                  >
                    {i + 1}
                    {q.header ? ` · ${shown(q.header)}` : ""}
                  </button>
                </li>
              );
            })}
          </ol>
        </nav>
      )}
      <div class="question" data-question-id={question.id} onKeyDown={onKeyDown}>
        <p class="q-meta">
          {question.header && <span class="chip">{shown(question.header)}</span>}
          {total > 1 && <span>{Text.questionOf(page, total)}</span>}
        </p>
        <h3 id={`${ids}-text`} class="q-text">
          {shown(question.question)}
        </h3>
        {question.detail && <Markdown id={detailId} className="detail" text={question.detail} />}
        {options.length > 0 && (
          <div
            class="options"
            role={multi ? "group" : "radiogroup"}
            aria-labelledby={`${ids}-text`}
            aria-describedby={problem ? problemId : detailId}
            aria-invalid={problem ? true : undefined}
          >
            {options.map((o) => (
              <label class="option" key={o.label}>
                <input
                  type={multi ? "checkbox" : "radio"}
                  name={`${card.key}|${question.id}`}
                  value={o.label}
                  checked={answer.selected.includes(o.label)}
                  disabled={card.locked}
                  onChange={() => cards.select(card.key, question.id, o.label)}
                />
                <span class="opt-text">
                  <span class="opt-label">{shown(o.label)}</span>
                  {o.description && <span class="opt-desc">{shown(o.description)}</span>}
                </span>
              </label>
            ))}
          </div>
        )}
        <label class="other">
          <span>{options.length > 0 ? Text.other : Text.yourAnswer}</span>
          <textarea
            rows={2}
            value={answer.custom}
            disabled={card.locked}
            aria-describedby={problem && options.length === 0 ? problemId : undefined}
            onInput={(e) => cards.setCustom(card.key, question.id, e.currentTarget.value)}
          />
        </label>
        {answer.skipped && <p class="skipped-note">{Text.skippedNote}</p>}
        {problem && (
          <p id={problemId} class="validation" role="alert">
            {problem}
          </p>
        )}
      </div>
      <footer class="card-foot">
        {page > 0 && (
          <button type="button" class="back" onClick={() => go(page - 1)}>
            {Text.back}
          </button>
        )}
        <button type="button" class="skip" disabled={card.locked} onClick={skip}>
          {Text.skip}
        </button>
        {last ? (
          <button type="button" class="submit primary" disabled={!card.canSubmit} onClick={submitAll}>
            {card.busy ? Text.sending : Text.submit}
          </button>
        ) : (
          <button type="button" class="next primary" disabled={card.locked} onClick={advance}>
            {Text.next}
          </button>
        )}
      </footer>
      <p class="keys-hint">{keysHint(question, last, card.callId !== undefined)}</p>
    </div>
  );
}

/** The plan panel of a plan review (M8): the plan, Approve, or Request changes with what should change. */
function PlanPanel({ card, cards, plan }: { card: CardView; cards: QuestionCards; plan: PlanReview }) {
  const id = plan.question.id;
  const custom = card.draft[id]?.custom ?? "";
  const [changing, setChanging] = useState(custom !== "");
  const [flagged, setFlagged] = useState(false);
  const ids = useId("plan");

  const approve = () => {
    cards.setCustom(card.key, id, "");
    cards.select(card.key, id, plan.approve);
    void cards.submit(card.key);
  };
  const send = () => {
    if (custom.trim() === "") {
      setFlagged(true);
      return;
    }
    if (plan.changes) cards.select(card.key, id, plan.changes);
    else {
      cards.skip(card.key, id); // no other option: nothing selected, only the text
      cards.setCustom(card.key, id, custom);
    }
    void cards.submit(card.key);
  };
  return (
    <div class="plan">
      <h3 id={`${ids}-text`} class="q-text">
        {shown(plan.question.question)}
      </h3>
      <Markdown className="plan-body" text={plan.question.detail ?? ""} />
      {changing ? (
        <div class="changes">
          <label class="other">
            <span>{Text.changesLabel}</span>
            <textarea
              rows={3}
              value={custom}
              disabled={card.locked}
              onInput={(e) => {
                setFlagged(false);
                cards.setCustom(card.key, id, e.currentTarget.value);
              }}
            />
          </label>
          {flagged && (
            <p class="validation" role="alert">
              {Text.changesNeeded}
            </p>
          )}
          <div class="card-foot">
            <button type="button" class="back" onClick={() => setChanging(false)}>
              {Text.back}
            </button>
            <button type="button" class="send-changes primary" disabled={!card.canSubmit} onClick={send}>
              {card.busy ? Text.sending : Text.sendChanges}
            </button>
          </div>
        </div>
      ) : (
        <div class="card-foot">
          <button type="button" class="request-changes" disabled={card.locked} onClick={() => setChanging(true)}>
            {Text.requestChanges}
          </button>
          <button type="button" class="approve primary" disabled={!card.canSubmit} onClick={approve}>
            {card.busy ? Text.sending : Text.approve}
          </button>
        </div>
      )}
    </div>
  );
}

/** The first answer control of a card: its first option, else its text box. */
function firstControl(root: HTMLElement | null): HTMLElement | null {
  return root?.querySelector<HTMLElement>(".question input:not([disabled]), .question textarea:not([disabled]), .plan button:not([disabled])") ?? null;
}
