// The rules of the card's form and the reply node that the components must
// not re-decide: when a question counts as answered, which key press
// advances, what a plan-review card is, what the countdown's live region
// announces, and how a reply reads when collapsed or copied.

import type { Intent, Question } from "../wire";
import type { CountdownPhase } from "./countdown";
import type { DraftAnswer } from "./drafts";
import type { ReplyItem } from "./reply";
import { seconds, Text } from "./text";

/** The intent kind of a plan review (M8). */
export const planReviewIntent = "plan-review";

/**
 * Why question cannot be submitted as drafted, or undefined when it can.
 * An answer is a choice, free text, or an explicit Skip; a question left
 * untouched is none of these.
 */
export function questionProblem(question: Question, answer: DraftAnswer | undefined): string | undefined {
  if (answer?.skipped) return undefined;
  if ((answer?.selected.length ?? 0) > 0 || (answer?.custom.trim() ?? "") !== "") return undefined;
  return (question.options?.length ?? 0) > 0 ? Text.chooseOrSkip : Text.writeOrSkip;
}

/** The index of the first question that cannot be submitted, or -1. */
export function firstProblem(questions: readonly Question[], draft: Readonly<Record<string, DraftAnswer>>): number {
  return questions.findIndex((q) => questionProblem(q, draft[q.id]) !== undefined);
}

/** The parts of a keydown event that decide whether it advances. */
export interface KeyPress {
  key: string;
  shiftKey: boolean;
  isComposing: boolean;
  /** 229 while an input method composes, also in browsers that report isComposing late. */
  keyCode: number;
  ctrlKey?: boolean;
  metaKey?: boolean;
  altKey?: boolean;
}

/** Whether an input method is composing: nothing it types is a shortcut. */
function composing(e: KeyPress): boolean {
  return e.isComposing || e.keyCode === 229;
}

/** Enter advances to the next question (or submits on the last) — not Shift+Enter, not while an IME composes. */
export function advancesOnEnter(e: KeyPress): boolean {
  return e.key === "Enter" && !e.shiftKey && !composing(e);
}

/**
 * The option a number key picks: 1–9 name the question's options in order,
 * unless the key is typed into free text, held with a modifier, or part of
 * an input method's composition. Undefined when the key picks nothing.
 */
export function optionForKey(e: KeyPress, question: Question, inText: boolean): string | undefined {
  if (inText || composing(e) || e.ctrlKey || e.metaKey || e.altKey || !/^[1-9]$/.test(e.key)) return undefined;
  return question.options?.[Number(e.key) - 1]?.label;
}

/** The card's one-line keyboard hint: what the keys do on this question. */
export function keysHint(question: Question, last: boolean, keyed: boolean): string {
  const count = question.options?.length ?? 0;
  const parts: string[] = [];
  if (count > 0) parts.push(`${count === 1 ? "1" : `1–${Math.min(9, count)}`} ${question.multiSelect ? "toggle" : "choose"}`);
  parts.push(`Enter ${last ? "submit" : "next"}`, "Shift+Enter new line");
  if (keyed) parts.push("Esc hide");
  return parts.join(" · ");
}

/** What a plan-review card offers: approve with one label, or request changes with another (or none). */
export interface PlanReview {
  approve: string;
  /** The option a change request selects: the one option besides approve, if there is exactly one. */
  changes: string | undefined;
  question: Question;
}

/**
 * The plan panel of a card, when its request is a plan review (M8): the
 * intent names the approve label, which is one of the only question's
 * options, and the question carries the plan as `detail`. Anything else is
 * shown as an ordinary card.
 */
export function planReview(intent: Intent | undefined, questions: readonly Question[]): PlanReview | undefined {
  const question = questions[0];
  if (intent?.kind !== planReviewIntent || questions.length !== 1 || !question?.detail) return undefined;
  const labels = (question.options ?? []).map((o) => o.label);
  if (!labels.includes(intent.approve)) return undefined;
  const others = labels.filter((l) => l !== intent.approve);
  return { approve: intent.approve, changes: others.length === 1 ? others[0] : undefined, question };
}

/**
 * What the countdown's polite live region says. It changes with the
 * countdown's phase and the card's notice only, never with the passing
 * seconds, so a screen reader hears "Continuing in 30s" once, then
 * "Paused", and so on — not a number every second.
 */
export function announcement(phase: CountdownPhase | undefined, remainingMs: number | undefined, notice: string | undefined): string {
  if (notice) return notice;
  switch (phase) {
    case "running":
      return remainingMs === undefined ? "" : `${Text.continuingIn(remainingMs)}. Focus the question to pause.`;
    case "paused":
      return remainingMs === undefined ? "" : `Countdown paused with ${seconds(remainingMs)}s remaining.`;
    case "frozen":
      return Text.waitingUntilAnswer;
    default:
      return "";
  }
}

/** One answer as text: the choices and the free text, or "Skipped". */
export function answerText(item: Pick<ReplyItem, "selected" | "custom" | "skipped">): string {
  if (item.skipped) return Text.skippedNote;
  return [...item.selected, ...(item.custom ? [item.custom] : [])].join(", ");
}

/** The collapsed line of a reply: "Which database? SQLite · Which extras? Skipped". */
export function replySummary(items: readonly ReplyItem[]): string {
  if (items.length === 0) return Text.noAnswer;
  return items.map((i) => `${i.header ?? i.question}: ${answerText(i)}`).join(" · ");
}

/** A reply as plain text for the clipboard: each question, then its answer. */
export function replyText(items: readonly ReplyItem[]): string {
  return items.map((i) => `${i.question}\n${answerText(i) || Text.noAnswer}`).join("\n\n");
}
