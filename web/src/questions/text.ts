// The words the question UI shows. Modules return these instead of
// formatting their own, so the card, the tool row and the tests agree.

import { Codes, type WireError } from "../wire";

/** Whole seconds left, rounded up: 1999 ms still reads "2s". */
export function seconds(ms: number): number {
  return Math.max(0, Math.ceil(ms / 1000));
}

/**
 * Unicode's bidirectional controls: the embeddings and overrides
 * (U+202A–202E), the isolates (U+2066–2069), and the marks LRM, RLM
 * (U+200E, U+200F) and ALM (U+061C).
 */
const bidiControls = /[\u202A-\u202E\u2066-\u2069\u200E\u200F\u061C]/g;

/**
 * Text an agent (or a person) wrote, as the UI shows it: each bidirectional
 * control becomes a visible marker, "⟦U+202E⟧", so none can reorder what a
 * person reads (a question that reads "approve" backwards, a label that
 * hides its end) and the person still sees that one was there. Only what is
 * shown changes; what is sent (an option's label as the answer) never does.
 */
export function shown(text: string): string {
  return text.replace(bidiControls, (c) => `⟦U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}⟧`);
}

export const Text = {
  continuingIn: (ms: number) => `Continuing in ${seconds(ms)}s`,
  paused: (ms: number) => `Paused · ${seconds(ms)}s remaining`,
  waitingUntilAnswer: "Waiting until you answer",
  workContinued: "Work continued — you can still answer",
  resubmit: "The answer did not arrive before work continued; submit it again.",
  attaching: "Connecting to this question…",
  noChannel: "This window cannot answer the question right now; it is not connected to it.",
  queued: "Your answer is queued for the agent.",
  replyQueued: "Another answer to this question is already queued for the agent.",
  notAnswerable: "This question is no longer answerable.",
  /** Why a late answer was refused, by its reason's code (D6); a code this Client does not know shows the service's words. */
  refused: (reason: WireError | undefined): string => {
    if (!reason) return Text.notAnswerable;
    switch (reason.code) {
      case Codes.callSettled:
        return "This question is answered already.";
      case Codes.callOpen:
        return "The agent is still waiting on this question: answer it in its card, or once work continues.";
      case Codes.callUnknown:
        return "This question is not tracked, so it cannot be answered late.";
      case Codes.noAgent:
        return "No agent is running this session and none could be resumed, so the answer was not sent. Start an agent in the resume pool, then answer again.";
      default:
        return reason.message;
    }
  },
  timedOut: "the user did not answer before the countdown ended",
  cancelled: "the user closed the question",

  rowWaiting: "Waiting for your answer",
  rowContinued: "Work continued · answer still available",
  rowQueued: "Answer sent · waiting for the agent",
  rowAnswered: (answered: number, total: number) => `${answered}/${total} answered`,
  rowClosed: "Closed without an answer",
  rowCancelled: "Cancelled",
  rowInterrupted: "Interrupted",
  viewAnswers: "View answers",
  hideAnswers: "Hide answers",
  rowAnswerAction: "Answer",
  rowShowAction: "Show question",
  discardReply: "Discard reply",
  discarding: "Discarding…",
  discardTooLate: "The agent already took this answer; it can no longer be discarded.",

  // The card (P1–P4, C1–C5) and the plan panel (M8).
  cardTitle: "The agent asks",
  planTitle: "Plan review",
  questionOf: (page: number, total: number) => `Question ${page + 1} of ${total}`,
  takeTime: "Take time",
  hide: "Hide",
  dismissAll: "Dismiss all questions",
  back: "Back",
  next: "Next",
  skip: "Skip",
  submit: "Submit answers",
  sending: "Sending…",
  other: "Other",
  yourAnswer: "Your answer",
  skippedNote: "Skipped",
  chooseOrSkip: "Choose an option, write an answer under Other, or skip this question.",
  writeOrSkip: "Write an answer, or skip this question.",
  approve: "Approve",
  requestChanges: "Request changes",
  changesLabel: "What should change?",
  sendChanges: "Send request",
  changesNeeded: "Say what should change before sending.",
  hiddenQuestions: "Hidden questions",

  // The reply node (G1).
  replyTitle: "Reply to earlier pending questions",
  replyRaw: "The recorded reply could not be read; it is shown as recorded.",
  expand: "Expand",
  collapse: "Collapse",
  copy: "Copy",
  copied: "Copied",
  noAnswer: "(no answer)",
} as const;
