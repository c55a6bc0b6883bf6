// Generated from schemas/ by schemas/codegen (json-schema-to-typescript); do not edit.
// Run `npm run generate` in schemas/codegen after changing a schema.

/**
 * The questions of one call, answered together as one batch; null reads as none, which every request refuses (EMPTY_QUESTIONS).
 */
export type Questions = Question[] | null;
/**
 * An answer batch: one answer per question of the call, each named once (D6); null reads as none.
 */
export type Answers = Answer[] | null;
/**
 * A Session id: 1 to 128 letters, digits, '-' and '_'. It names subjects and keys as it is; anything else is refused BAD_REQUEST.
 */
export type SessionId = string;
/**
 * A tool call id, any 1 to 128 bytes; subjects, keys and consumer names spell it as its call token (the id when plain, else '=' and its unpadded base64url).
 */
export type CallId = string;

/**
 * The shapes of the question service and the Session's other requests that the web Client reads or sends, by schema file (schemas/).
 */
export interface WireShapes {
  "kv/user-questions.json": View;
  "waterfall/request.json": WaterfallRequest;
  "frames/claim.json": ClaimFrame;
  "requests/answer.json": AnswerRequest;
  "replies/answer.json": AnswerResult;
  "requests/discard.json": DiscardRequest;
  "replies/discard.json": DiscardReply;
}
/**
 * The userQuestions KV value under a Session id: the question projection of the Session, always the fold of a prefix of its log (D1-D5), written by the question worker only. Every seq is a Session event seq: the SESSIONS stream sequence of the event's message.
 */
export interface View {
  /**
   * Calls still waiting for an answer, in the order they were asked.
   */
  active: Call[];
  /**
   * Calls with their answer batch, kept so a Client can show a late answer beside the original call (D5).
   */
  settled: Settled[];
  /**
   * The latest request/header offered the timed ask_user_question schema (D2).
   */
  timed: boolean;
  /**
   * The seq of the last event folded.
   */
  lastSeq: number;
}
/**
 * An active question call. queued is the late reply spliced into the agent's inbox and not admitted yet, which does not settle the call (D5); released is the last late reply the log released unadmitted, kept because claiming it again after a restart queues it again (D8), and Clients show nothing for it.
 */
export interface Call {
  callId: string;
  /**
   * open: recorded, its foreground wait may run; continued: its tool returned pending (or was repaired TOOL_OUTCOME_UNKNOWN), answerable through holdover.q.answer.
   */
  status: "open" | "continued";
  questions: Questions;
  /**
   * The run_code call that dispatched it (D4).
   */
  parentCallId?: string;
  /**
   * A timed-schema call made with timeout -1 (M3).
   */
  blocking?: boolean;
  queued?: Queued;
  released?: Queued;
  /**
   * The seq of the event that opened the call.
   */
  seq: number;
}
/**
 * One structured question of an ask_user_question call. Its id is unique within the call and names it in the answer batch.
 */
export interface Question {
  id: string;
  /**
   * The question, as a complete sentence.
   */
  question: string;
  /**
   * A short label shown above the question.
   */
  header?: string;
  /**
   * The choices offered; the user may also type a custom answer.
   */
  options?: Option[];
  /**
   * The user may pick more than one option.
   */
  multiSelect?: boolean;
  /**
   * Markdown shown beside the question; a plan review carries the plan here (M8).
   */
  detail?: string;
}
/**
 * One choice of a question. A label ending in "(Recommended)" is a suggestion Clients show pre-selected; it is passed through unchanged.
 */
export interface Option {
  /**
   * What the user picks, shown and returned as written.
   */
  label: string;
  /**
   * What choosing this option means.
   */
  description?: string;
}
/**
 * A late reply that was spliced into the agent's inbox; in the view reply, also one stored on the call's reply subject that no runtime spliced yet.
 */
export interface Queued {
  messageId: string;
  answers: Answers;
  /**
   * Who gave the reply (its source's user), when known.
   */
  by?: string;
  /**
   * The seq of its agent/inbox/spliced event; for a reply not spliced yet (view reply only), the stream seq of the reply itself.
   */
  seq: number;
}
/**
 * The user's answer to one question. An empty selected and no custom text is a skipped question.
 */
export interface Answer {
  /**
   * The question answered.
   */
  id: string;
  /**
   * The option labels chosen, exactly as written; Holdover writes [] for none.
   */
  selected: string[] | null;
  /**
   * Text the user typed instead of or beside the options.
   */
  custom?: string;
}
/**
 * A call with its answer batch.
 */
export interface Settled {
  callId: string;
  questions: Questions;
  answers: Answers;
  /**
   * An admitted late reply settled it; false when its tool result carried the batch.
   */
  late: boolean;
  /**
   * Who gave a late reply (its source's user), when known.
   */
  by?: string;
  /**
   * The seq of the settling event.
   */
  seq: number;
}
/**
 * One foreground request as Clients see it (W6, W8): published by the worker owning its wait as a core request on holdover.session.<sid>.ask, whose reply subject takes the outcome, and listed by holdover.q.inflight.
 */
export interface WaterfallRequest {
  /**
   * Names this request in outcomes, cancel notices and status and abort requests; a call asked again gets a new one.
   */
  requestId: string;
  session: SessionId;
  callId?: CallId;
  questions: Questions;
  intent?: Intent;
  wait?: WaitRef;
  /**
   * The wait's original deadline, for display only: a claim pauses it (W2) and a Client's countdown starts from its claim's remainingMs (W3).
   */
  deadline?: string;
  /**
   * The lease of the worker that owns the request; Clients drop its requests when it ends.
   */
  owner: string;
  /**
   * Where outcomes go: the reply subject of the published request, written out for inflight listings.
   */
  reply?: string;
}
/**
 * A purpose the worker validates. The only kind is plan-review (M8): one question carrying the plan as detail, with approve one of its option labels.
 */
export interface Intent {
  kind: "plan-review";
  /**
   * The option label that approves the plan.
   */
  approve: string;
}
/**
 * The wait of a keyed request: {callId, timed: true} for askTimed, {callId} for a keyed blocking ask (M3). A legacy request has none and cannot be claimed.
 */
export interface WaitRef {
  callId: string;
  timed?: boolean;
}
/**
 * A frame the worker sends into a Client's claim (W2-W4): exactly one {"remainingMs": N} after the claim appears, the time left to the wait's deadline (-1 for a wait without one), and {"closed": true} when the request settles.
 */
export interface ClaimFrame {
  remainingMs?: number;
  closed?: boolean;
}
/**
 * The body of a holdover.q.answer request: a late answer to a continued call (D6). The batch names every question of the call exactly once (BAD_ANSWER otherwise).
 */
export interface AnswerRequest {
  session: SessionId;
  callId: CallId;
  answers: Answers;
}
/**
 * The reply of holdover.q.answer. An accepted answer is queued in the Session inbox as the user message messageId; it settles nothing until the agent admits it (D5). accepted false: the call takes no late answer now, and reason says why: code CALL_OPEN (the call is open: its agent may be waiting on it), CALL_UNKNOWN (no such call is tracked: never asked in a timed Session, or removed by a failed result), CALL_SETTLED (answered already), NO_AGENT (open, no live agent serves the Session and no runtime of the resume pool took it over), or another a newer worker defines; its message is for people.
 */
export interface AnswerResult {
  accepted: boolean;
  /**
   * The id of the queued reply (its Nats-Msg-Id), present when accepted.
   */
  messageId?: string;
  reason?: WireError;
}
/**
 * An error as every process boundary carries it: a stable code (SPEC section 8 or a transport code) and a message for people. Branch on code only.
 */
export interface WireError {
  /**
   * ASK_TIMED_OUT, ASK_ABORTED, ASK_CANCELLED, NO_PROVIDER, BAD_TIMEOUT, DUPLICATE_WAIT, EMPTY_QUESTIONS, BAD_INTENT, CALLER_NOT_LIVE, DELEGATED_CALLER, REPLY_QUEUED, BAD_ANSWER, UNTRACKED_CALL, TOOL_OUTCOME_UNKNOWN, CALL_OPEN, CALL_UNKNOWN, CALL_SETTLED, NO_AGENT (a late answer's refusal reason), BAD_REQUEST, NOT_FOUND, INTERNAL, CONFLICT, or another code a newer peer defines.
   */
  code: string;
  message: string;
}
/**
 * The body of a request on holdover.session.<sid>.discard, which the Session's live root answers: drop a queued inbox message before it is admitted (D8, P5). session, when given (a Client's call through the gateway names it, which routes by it), must be the Session of the subject.
 */
export interface DiscardRequest {
  session?: SessionId;
  /**
   * The queued message, for a late reply the queued.messageId of the View.
   */
  messageId: string;
  /**
   * Why, recorded in agent/inbox/discarded.
   */
  reason?: string;
}
/**
 * The live root's reply to a discard request: {} when the message was discarded, else the error: NOT_FOUND (a message it does not have), CONFLICT (admitted or discarded already), BAD_REQUEST.
 */
export interface DiscardReply {
  error?: WireError;
}
