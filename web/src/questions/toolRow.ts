// The state of an ask_user_question tool row in the transcript (P5), as a
// pure function of what the Client has read: the call's projection view and
// its recorded tool result. The row component renders it and wires its
// action to the card (open the panel, view answers).
//
// The projection decides first: it knows late answers, queued replies and
// continued calls that the tool result (recorded once, often "pending")
// cannot show. The tool result decides only for calls the projection does
// not track (legacy calls, D2) or has dropped (D3).

import type { Answer, Question, ToolResult, View } from "../wire";
import { Codes, joinText, readAnswers } from "../wire";
import { isRecord } from "../json";
import { pair, type ReplyItem } from "./reply";
import { Text } from "./text";

export type ToolRowKind = "waiting" | "continued" | "queued" | "answered" | "closed" | "cancelled" | "interrupted";

/**
 * What the row's action does.
 * - `answer`: reopen the answer panel (a continued question, P4).
 * - `view-answers`: expand the read-only transcript of a queued reply (P5).
 * - `view`: open a read-only panel with the recorded answers (P5).
 * - `show`: show a hidden panel whose request is still waiting (P4).
 */
export type ToolRowAction = "answer" | "view-answers" | "view" | "show";

export interface ToolRowState {
  kind: ToolRowKind;
  label: string;
  action: ToolRowAction | undefined;
  actionLabel: string | undefined;
  /** The submitted or recorded answers, paired with their questions, for queued and answered rows. */
  items: ReplyItem[] | undefined;
  /** For answered rows: how many questions got a non-skipped answer, of how many. */
  answered: number | undefined;
  total: number | undefined;
  /** An admitted late reply settled the call after it continued. */
  late: boolean;
  /** The queued reply can still be discarded before admission, which restores the answer action (P5). */
  discardable: boolean;
}

export interface ToolRowInput {
  callId: string;
  /** The questions of the tool call's arguments, for rows the projection does not track. */
  questions?: readonly Question[];
  /** The Session's projection view, once the Client has one. */
  view?: View | undefined;
  /** The call's recorded tool/result, once there is one. */
  result?: ToolResult | undefined;
  /** The call's Turn ended without recording a result. */
  turnEnded?: boolean;
  /** This Client holds the waiting request's panel hidden; the row can show it again (P4). */
  panelHidden?: boolean;
}

export function toolRowState(input: ToolRowInput): ToolRowState {
  const { view, callId, result } = input;
  const settled = view?.settled.find((s) => s.callId === callId);
  if (settled) return answered(settled.questions, settled.answers, settled.late);

  const call = view?.active.find((c) => c.callId === callId);
  if (call?.status === "open") return input.panelHidden ? row("waiting", Text.rowWaiting, "show", Text.rowShowAction) : row("waiting", Text.rowWaiting);
  if (call?.status === "continued") {
    if (call.queued) {
      return { ...row("queued", Text.rowQueued, "view-answers", Text.viewAnswers), items: pair(call.questions, call.queued.answers), discardable: true };
    }
    return row("continued", Text.rowContinued, "answer", Text.rowAnswerAction);
  }

  if (!result) return input.turnEnded ? row("interrupted", Text.rowInterrupted) : row("waiting", Text.rowWaiting);
  if (result.isError) {
    const code = result.error?.code;
    if (code === Codes.askCancelled) return row("cancelled", Text.rowCancelled);
    if (code === Codes.askAborted || code === Codes.toolOutcomeUnknown) return row("interrupted", Text.rowInterrupted);
    return row("closed", Text.rowClosed);
  }
  const outcome = readResult(joinText(result.content));
  const questions = input.questions ?? [];
  if (outcome?.answers) return answered(questions, outcome.answers, false);
  // A pending result the projection no longer lists is not answerable any more;
  // before any view arrives, pending is what the result says (D3).
  if (outcome?.pending && !view) return row("continued", Text.rowContinued, "answer", Text.rowAnswerAction);
  return row("closed", Text.rowClosed);
}

function answered(questions: readonly Question[], answers: readonly Answer[], late: boolean): ToolRowState {
  const items = pair(questions, answers);
  const count = items.filter((i) => !i.skipped).length;
  const total = questions.length || answers.length;
  return { ...row("answered", Text.rowAnswered(count, total), "view", Text.viewAnswers), items, answered: count, total, late };
}

function row(kind: ToolRowKind, label: string, action?: ToolRowAction, actionLabel?: string): ToolRowState {
  return { kind, label, action, actionLabel, items: undefined, answered: undefined, total: undefined, late: false, discardable: false };
}

/** Reads a tool result text as an in-time batch (M7) or a pending result (M6). */
function readResult(text: string): { answers?: Answer[]; pending?: boolean } | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isRecord(value)) return undefined;
  if (value.pending === true) return { pending: true };
  const answers = readAnswers(value.answers);
  if (!answers) return undefined;
  return { answers };
}
