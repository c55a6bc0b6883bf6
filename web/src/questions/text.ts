// The words the question UI shows. Modules return these instead of
// formatting their own, so the card, the tool row and the tests agree.

/** Whole seconds left, rounded up: 1999 ms still reads "2s". */
export function seconds(ms: number): number {
  return Math.max(0, Math.ceil(ms / 1000));
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
  rowAnswerAction: "Answer",
} as const;
