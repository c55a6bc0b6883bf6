// The question UI's state, free of any framework or DOM: what the card,
// tool-row and reply components render, and the rules they must not
// re-decide.
//
//   reduceCards     the pure card reducer: one card per (Session, callId),
//                   channel selection, delivery races and removal (C1–C5),
//                   panel actions; state in, state and effects out.
//   cardView        what a card shows: channel, lock, autofocus, hint (C3, C4, P3).
//   ClaimController the stateful half: answer channels, attachWait claims
//                   (W2–W4) and one Countdown per timed card, running the
//                   reducer's effects and feeding back what they report.
//   QuestionCards   the two wired together with drafts and the RPCs: what
//                   the page uses.
//   Countdown       the local countdown of a timed card (P1–P2, W3, W5).
//   DraftStore      browser-local drafts with their disposition (P2, C2).
//   toolRowState    the ask_user_question row: waiting, continued, queued,
//                   answered, closed, cancelled, interrupted (P5).
//   readReply       the late-reply node, identified by source (G1, G2).
//   form            validation, Enter to advance, plan review (M8), the
//                   countdown's live-region text, reply summaries.
//   Text            every string these modules show.
//
// Time comes from an injected Clock, storage from an injected Storage, and
// the gateway from an injected QuestionsTransport (protocol/Connection in
// the browser), so every rule is tested with fake time.

export { QuestionCards } from "./cards";
export type { AnswerResult, ForwardedRequest, QuestionCardsOptions, QuestionsTransport } from "./cards";
export { cardKey, emptyCards, reduceCards } from "./cardState";
export type { CardAction, CardEffect, CardState, CardsState, RequestPayload } from "./cardState";
export { cardView, channelOf } from "./cardView";
export type { CardView, ChannelKind, CountdownInfo } from "./cardView";
export { ClaimController } from "./claims";
export type { AnswerChannel, Claim, ClaimHandlers, ClaimTransport } from "./claims";
export { systemClock } from "./clock";
export type { Clock, TimerHandle } from "./clock";
export { Countdown } from "./countdown";
export type { CountdownOptions, CountdownPhase, Disposition } from "./countdown";
export { callDraftKey, defaultMaxAgeMs, DraftStore } from "./drafts";
export type { Draft, DraftAnswer, DraftStoreOptions } from "./drafts";
export { advancesOnEnter, announcement, answerText, firstProblem, keysHint, optionForKey, planReview, planReviewIntent, questionProblem, replySummary, replyText } from "./form";
export type { KeyPress, PlanReview } from "./form";
export { isQuestionReply, pair, readReply } from "./reply";
export type { ReplyItem, ReplyView } from "./reply";
export { seconds, Text } from "./text";
export { toolRowState } from "./toolRow";
export type { ToolRowAction, ToolRowInput, ToolRowKind, ToolRowState } from "./toolRow";
