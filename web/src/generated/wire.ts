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
 * An id a Client chooses for what a frame starts (a watch, call, stream or inbox feed), unique on the connection; every frame that belongs to it repeats it. At most 128 bytes: the gateway refuses a longer one, BAD_REQUEST.
 */
export type ClientId = string;
/**
 * <service>.<op>: the service picks the gateway's binding, the op is looked up in it (userQuestions.answer, userQuestions.attachWait, session.discard).
 */
export type Method = string;
/**
 * The id a frame belongs to: one a Client chose for what it started, or the Host's request id of a forwarded request.
 */
export type FrameId = string;

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
  "websocket/client/call.json": CallFrame;
  "websocket/client/close.json": CloseFrame;
  "websocket/client/delegate.json": DelegateFrame;
  "websocket/client/hello.json": HelloFrame;
  "websocket/client/inbox.json": InboxFrame;
  "websocket/client/open.json": OpenFrame;
  "websocket/client/reject.json": RejectFrame;
  "websocket/client/settle.json": SettleFrame;
  "websocket/client/unwatch.json": UnwatchFrame;
  "websocket/client/watch.json": WatchFrame;
  "websocket/gateway/cancel.json": CancelFrame;
  "websocket/gateway/close.json": ClosedFrame;
  "websocket/gateway/error.json": ErrorFrame;
  "websocket/gateway/events.json": EventsFrame;
  "websocket/gateway/frame.json": StreamFrame;
  "websocket/gateway/ready.json": ReadyFrame;
  "websocket/gateway/request.json": RequestFrame;
  "websocket/gateway/result.json": ResultFrame;
  "websocket/gateway/summary.json": SummaryFrame;
  "websocket/gateway/view.json": ViewFrame;
  "websocket/gateway/welcome.json": WelcomeFrame;
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
/**
 * Calls the RPC method with params (docs/protocol.md, RPC calls): one result or one error frame names id. params.session must be a Session the token grants; params naming none need a token granting every Session.
 */
export interface CallFrame {
  type: "call";
  id: ClientId;
  method: Method;
  /**
   * The call's params, sent as the request body; params.session names its Session.
   */
  params: {};
}
/**
 * Ends the Client's stream or inbox feed id. An id not open is ignored. Never refused by the rate limit.
 */
export interface CloseFrame {
  type: "close";
  id: ClientId;
}
/**
 * Passes the forwarded request id on without answering it (W4). Never refused by the rate limit.
 */
export interface DelegateFrame {
  type: "delegate";
  id: FrameId;
}
/**
 * A Client's first frame (docs/protocol.md, hello / welcome): the newest protocol version it speaks, its name for the gateway's logs, and its access token unless the WebSocket's address carries it (both must then agree). Frames before it get UNAUTHORIZED; a bad token gets UNAUTHORIZED and close 4401.
 */
export interface HelloFrame {
  type: "hello";
  /**
   * The newest protocol version the Client speaks; a Client of version N speaks every version from 1 to N, and the gateway answers in the newest both speak.
   */
  protocol: number;
  /**
   * The Client's name in the gateway's logs: holdover-web, holdover-answer …
   */
  client: string;
  /**
   * The access token: a static token of the gateway's token file, or a signed JWT. Never logged.
   */
  token?: string;
}
/**
 * Opens the inbox feed id (docs/protocol.md, The inbox): a summary of every Session the token grants that has questions, then ready, then each Session whose projection changes. A close ends it.
 */
export interface InboxFrame {
  type: "inbox";
  id: ClientId;
}
/**
 * Opens the Remote stream method with params as the stream id (docs/protocol.md, Remote streams): the gateway sends its messages as frame frames and ends it with close. params.session must be a Session the token grants; params naming none need a token granting every Session.
 */
export interface OpenFrame {
  type: "open";
  id: ClientId;
  method: Method;
  /**
   * The stream's params, sent as the request body; params.session names its Session.
   */
  params: {};
}
/**
 * Fails the forwarded request id with a coded error: ASK_TIMED_OUT when the Client's countdown ran out (W5), ASK_CANCELLED when the user closed an unkeyed blocking panel (C2), or a claim stream's failure (SPEC section 7). Never refused by the rate limit.
 */
export interface RejectFrame {
  type: "reject";
  id: FrameId;
  error: WireError;
}
/**
 * Answers the forwarded request id (W4, W8): value is the Remote Event's result, for a question request the answer batch {answers} (replies/ask.json). Nothing acknowledges it; a Client sends one outcome per request. Never refused by the rate limit.
 */
export interface SettleFrame {
  type: "settle";
  id: FrameId;
  /**
   * The event's result object.
   */
  value: {};
}
/**
 * Ends the watch id. An id not watched is ignored. Never refused by the rate limit.
 */
export interface UnwatchFrame {
  type: "unwatch";
  id: ClientId;
}
/**
 * Watches a Session (docs/protocol.md, Watching a Session): its events with Session seq from fromSeq on, in order, then what follows, and its projection view now and whenever it changes; then one ready. The token must grant the Session (FORBIDDEN).
 */
export interface WatchFrame {
  type: "watch";
  id: ClientId;
  session: SessionId;
  /**
   * The first Session seq to send; 0 or absent sends the whole log. After a reconnect: the last seq the Client has, plus 1.
   */
  fromSeq?: number;
}
/**
 * The forwarded request id has ended at the Host: answered here or elsewhere, expired, rejected, aborted, or its owner lost. It only removes the request's answer channel and never says the question was answered (C5): the projection does.
 */
export interface CancelFrame {
  type: "cancel";
  id: FrameId;
  session: SessionId;
  /**
   * How it ended, for logs and display only: answered, expired, rejected, aborted, owner-lost, gone.
   */
  reason?: string;
}
/**
 * The gateway's close: the stream or inbox feed id has ended, with error when it failed (for a claim stream, a terminal claim failure, SPEC section 7). Nothing more flows on the id.
 */
export interface ClosedFrame {
  type: "close";
  id: FrameId;
  error?: WireError;
}
/**
 * A refused frame, or the end of the call or watch id; without an id it concerns the connection. code is the stable code of SPEC section 8, a service's, or one of the protocol's: BAD_REQUEST, NOT_FOUND, INTERNAL, UNAUTHORIZED, FORBIDDEN, UNAVAILABLE, FRAME_TOO_LARGE, RATE_LIMITED, LIMIT_EXCEEDED, TOO_MANY_CONNECTIONS. Clients branch on code only and show message.
 */
export interface ErrorFrame {
  type: "error";
  id?: FrameId;
  /**
   * The stable code.
   */
  code: string;
  /**
   * What happened, for people.
   */
  message: string;
}
/**
 * Events of the Session the watch id follows, in Session seq order, each once (docs/protocol.md, Watching a Session).
 */
export interface EventsFrame {
  type: "events";
  id: FrameId;
  session: SessionId;
  /**
   * The events; null reads as none.
   */
  events: SessionEvent[] | null;
}
/**
 * A Session event as a watch delivers it: type, at and data exactly as the Session log records them (event.json), and seq, its Session seq: the stream sequence of its message in SESSIONS, so a Session's seqs grow but skip numbers.
 */
export interface SessionEvent {
  seq: number;
  /**
   * The event type.
   */
  type: string;
  at: string;
  /**
   * The event's body (event.json names the body schema of each type Holdover reads); absent for an event without one.
   */
  data?: unknown;
}
/**
 * One message of the Remote stream id: for userQuestions.attachWait a claim frame (frames/claim.json).
 */
export interface StreamFrame {
  type: "frame";
  id: FrameId;
  /**
   * The stream's message, unchanged.
   */
  data: unknown;
}
/**
 * Once per watch (with its session) or inbox feed (without): what existed when it started has been sent, and what follows arrives as it happens.
 */
export interface ReadyFrame {
  type: "ready";
  id: FrameId;
  session?: SessionId;
}
/**
 * A Remote Event request of a watched Session, forwarded (docs/protocol.md, Remote Event requests): id is the Host's request id, event the Remote Event name, payload the request body unchanged. It takes one settle, reject or delegate from the Client.
 */
export interface RequestFrame {
  type: "request";
  id: FrameId;
  session: SessionId;
  /**
   * The Remote Event name: user-questions/request for a question request.
   */
  event: string;
  /**
   * The request body as the Host published it: for user-questions/request a waterfall request (waterfall/request.json).
   */
  payload: unknown;
}
/**
 * The result of the call id: the service's reply, unchanged.
 */
export interface ResultFrame {
  type: "result";
  id: FrameId;
  /**
   * The reply; null for an empty one.
   */
  result: unknown;
}
/**
 * Sessions of the inbox feed id whose questions changed, at most 256 a frame (docs/protocol.md, The inbox).
 */
export interface SummaryFrame {
  type: "summary";
  id: FrameId;
  /**
   * The Sessions; null reads as none.
   */
  sessions: SessionSummary[] | null;
}
/**
 * One Session as the inbox feed shows it: its projection's active calls, the count of its settled ones (the list only grows), its last folded seq, and the Host deadlines of its live timed waits by call id when the question service can tell them, for display only (a countdown comes from a claim, W3). A Session with no active call left has no question waiting any more.
 */
export interface SessionSummary {
  session: SessionId;
  /**
   * The active calls, as in the view; null reads as none.
   */
  active: Call[] | null;
  settled: number;
  lastSeq: number;
  /**
   * The Host's original deadline (RFC 3339, UTC) by call id.
   */
  deadlines?: {
    [k: string]: string | undefined;
  };
}
/**
 * The projection view of the Session the watch id follows, now and whenever it changes: the userQuestions value (kv/user-questions.json), or null while the Session has none, which reads as a Session with no questions. Views and events arrive independently.
 */
export interface ViewFrame {
  type: "view";
  id: FrameId;
  session: SessionId;
  view: View | null;
}
/**
 * The gateway's answer to hello: the protocol version spoken on the connection, min(hello.protocol, the gateway's), the connection's name in the gateway's logs and claim metadata, the token's user and the Sessions it grants.
 */
export interface WelcomeFrame {
  type: "welcome";
  /**
   * The version spoken on the connection: one this gateway speaks.
   */
  protocol: 1 | 2;
  /**
   * This connection's name in the gateway's logs and in claim metadata.
   */
  clientId: string;
  /**
   * The token's user.
   */
  user: string;
  /**
   * The Sessions the token grants, ["*"] for all; null reads as none.
   */
  sessions: string[] | null;
}
/**
 * Every frame a Client sends on the WebSocket (docs/protocol.md), by type (schemas/websocket/client/).
 */
export interface ClientFrames {
  call: CallFrame;
  close: CloseFrame;
  delegate: DelegateFrame;
  hello: HelloFrame;
  inbox: InboxFrame;
  open: OpenFrame;
  reject: RejectFrame;
  settle: SettleFrame;
  unwatch: UnwatchFrame;
  watch: WatchFrame;
}
/**
 * Every frame the gateway sends on the WebSocket (docs/protocol.md), by type (schemas/websocket/gateway/).
 */
export interface GatewayFrames {
  cancel: CancelFrame;
  close: ClosedFrame;
  error: ErrorFrame;
  events: EventsFrame;
  frame: StreamFrame;
  ready: ReadyFrame;
  request: RequestFrame;
  result: ResultFrame;
  summary: SummaryFrame;
  view: ViewFrame;
  welcome: WelcomeFrame;
}
