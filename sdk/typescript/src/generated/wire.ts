// Generated from schemas/ by schemas/codegen (json-schema-to-typescript); do not edit.
// Run `npm run generate` in schemas/codegen after changing a schema.

/**
 * A Session id: 1 to 128 letters, digits, '-' and '_'. It names subjects and keys as it is; anything else is refused BAD_REQUEST.
 */
export type SessionId = string;
/**
 * A tool call id, any 1 to 128 bytes; subjects, keys and consumer names spell it as its call token (the id when plain, else '=' and its unpadded base64url).
 */
export type CallId = string;
/**
 * The questions of one call, answered together as one batch; null reads as none, which every request refuses (EMPTY_QUESTIONS).
 */
export type Questions = Question[] | null;
/**
 * An answer batch: one answer per question of the call, each named once (D6); null reads as none.
 */
export type Answers = Answer[] | null;

/**
 * The shapes of the question service and the Session's other requests that the agent SDK reads or sends, by schema file (schemas/).
 */
export interface WireShapes {
  "requests/ask.json": AskRequest;
  "requests/ask-timed.json": AskTimedRequest;
  "replies/ask.json": AskReply;
  "replies/ask-timed.json": AskTimedReply;
  "replies/error.json": ErrorReply;
  "frames/accepted.json": AcceptedFrame;
  "requests/answer.json": AnswerRequest;
  "replies/answer.json": AnswerResult;
  "requests/discard.json": DiscardRequest;
  "replies/discard.json": DiscardReply;
  "requests/resume.json": ResumeRequest;
  "replies/resume.json": ResumeReply;
  "kv/live-root.json": LiveRootRecord;
  "inbox/reply-text.json": ReplyText;
  "tool/arguments.json": ToolArguments;
  "tool/answers.json": AnswerBatch;
  "tool/pending.json": PendingResult;
}
/**
 * The body of a holdover.q.ask request: a blocking ask (M1, M3, M8). With a callId it is keyed (the timed tool called with timeout -1, or a plan review), tracked and waits until answered; without one it is a legacy ask, refused NO_PROVIDER when no Client watches the Session. It must carry the Holdover-Caller-Lease header and a reply subject.
 */
export interface AskRequest {
  session: SessionId;
  callId?: CallId;
  agent?: AgentRef;
  questions: Questions;
  intent?: Intent;
}
/**
 * The runtime instance that asks (M9): the instance and epoch of its liveRoots registration; owner is set for a child agent and names the agent that owns it (such a caller is refused DELEGATED_CALLER).
 */
export interface AgentRef {
  instance: string;
  epoch: number;
  owner?: string;
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
 * The body of a holdover.q.askTimed request: a bounded foreground wait (W1). The request must carry the Holdover-Caller-Lease header and a reply subject. Fields it does not have are refused BAD_REQUEST naming them. Without agent it is refused CALLER_NOT_LIVE.
 */
export interface AskTimedRequest {
  session: SessionId;
  callId: CallId;
  agent?: AgentRef;
  questions: Questions;
  /**
   * The foreground wait in milliseconds: the tool's timeout in seconds times 1000. Anything but an integer in 1..2147483647 is BAD_TIMEOUT.
   */
  timeoutMs: number;
}
/**
 * The reply of holdover.q.ask once answered: the answer batch. Before it, on the same reply subject, comes the accepted frame; an error comes instead as {code, message} (replies/error.json).
 */
export interface AskReply {
  /**
   * One answer per question of the call.
   */
  answers: Answer[];
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
 * The reply of holdover.q.askTimed once its wait ended: {"answers": [...]} when the user answered in time, {"pending": true} when it ended unanswered (the deadline, a Client countdown, W5). Before it, on the same reply subject, comes the accepted frame; an error comes instead as {code, message} (replies/error.json).
 */
export interface AskTimedReply {
  /**
   * The batch, one answer per question.
   */
  answers?: Answer[];
  /**
   * The wait ended without an answer batch; the question stays answerable.
   */
  pending?: boolean;
}
/**
 * The body of every error reply of the userQuestions service, which also carries the Nats-Service-Error-Code (the code) and Nats-Service-Error (the message) headers.
 */
export interface ErrorReply {
  /**
   * ASK_TIMED_OUT, ASK_ABORTED, ASK_CANCELLED, NO_PROVIDER, BAD_TIMEOUT, DUPLICATE_WAIT, EMPTY_QUESTIONS, BAD_INTENT, CALLER_NOT_LIVE, DELEGATED_CALLER, REPLY_QUEUED, BAD_ANSWER, UNTRACKED_CALL, TOOL_OUTCOME_UNKNOWN, CALL_OPEN, CALL_UNKNOWN, CALL_SETTLED, NO_AGENT (a late answer's refusal reason), BAD_REQUEST, NOT_FOUND, INTERNAL, CONFLICT, or another code a newer peer defines.
   */
  code: string;
  message: string;
}
/**
 * The first message back on an ask or askTimed reply subject, with the header Holdover-Frame: accepted: the worker that owns the wait, the request id its status and abort requests name, and the worker's release bound. A reply may overtake it.
 */
export interface AcceptedFrame {
  /**
   * The owning worker's lease, lease~worker~<id>: watch it; status and abort go to holdover.q.wait.<owner>.<verb>.
   */
  owner: string;
  /**
   * The request, as the waterfall and cancel notices name it.
   */
  requestId: string;
  /**
   * The owning worker's release bound in milliseconds: its lease ends that long after the worker is gone. The caller's backstop (agent-protocol §7) counts in it: status half a bound past the deadline, with half a bound's patience.
   */
  releaseBoundMs: number;
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
 * The body of a request on holdover.runtime.resume (queue group runtimes): the question worker asks the runtime pool to resume a Session that has no live root, or whose root's lease is gone, once a late answer for it is queued (D7).
 */
export interface ResumeRequest {
  session: SessionId;
}
/**
 * A runtime's reply to a resume request: the instance that took the Session as its live root, or the error that stopped it.
 */
export interface ResumeReply {
  instance?: string;
  error?: WireError;
}
/**
 * The liveRoots KV value under a Session id (M9): which runtime instance is the Session's live root. Written only with compare-and-set: a create when the key has no value, else an update expecting the revision read. Every registration takes the epoch one past the record's (1 when there is none), after a release too; a release empties instance and keeps the epoch.
 */
export interface LiveRootRecord {
  /**
   * The live root's runtime instance id; empty once released.
   */
  instance: string;
  /**
   * The registration's epoch; an ask names it, so an earlier registration never passes again.
   */
  epoch: number;
  /**
   * Set when the Session runs as a child agent: the agent that owns it. A child may not ask the user (DELEGATED_CALLER).
   */
  owner?: string;
  /**
   * When this registration or release was written.
   */
  since: string;
}
/**
 * The one text part of a late reply's content: what the model reads as a user message, naming the call and repeating its questions (D6). The message's source, not this text, makes it a reply (G1).
 */
export interface ReplyText {
  kind: "answer_to_pending_question";
  tool: "ask_user_question";
  callId: string;
  questions: Questions;
  answers: Answers;
}
/**
 * The arguments of an ask_user_question tool/call, as the model writes them. Arguments that are not a valid ask leave the call untracked (M2-M4).
 */
export interface ToolArguments {
  /**
   * One or more questions, ids unique within the call (M4).
   *
   * @minItems 1
   */
  questions: [Question, ...Question[]] | null;
  /**
   * Seconds to wait in the foreground (M2): -1 waits until the user answers (M3), else 1..2147483; absent or null (as some providers send an optional parameter), the runtime's default applies. Only the timed tool schema has it.
   */
  timeout?: (
    | -1
    | {
        [k: string]: unknown | undefined;
      }
  ) &
    (
      | ((
          | -1
          | {
              [k: string]: unknown | undefined;
            }
        ) &
          number)
      | ((
          | -1
          | {
              [k: string]: unknown | undefined;
            }
        ) &
          null)
    );
  intent?: Intent;
}
/**
 * An answer batch: the text of an ask_user_question tool/result answered in time (M7), and the reply of holdover.q.ask.
 */
export interface AnswerBatch {
  /**
   * One answer per question of the call.
   */
  answers: Answer[];
}
/**
 * The text of an ask_user_question tool/result whose wait ended without an answer batch (M6). The runtime writes it from the service's {"pending":true}; the projection continues the call on pending true alone, and the message is the model's only guidance, so it says what pending means and is not.
 */
export interface PendingResult {
  pending: true;
  /**
   * The call that went pending; a late answer will name it.
   */
  callId: string;
  /**
   * What the model reads: the question is pending, not skipped and not permission; the reply may come later as a user message of kind answer_to_pending_question.
   */
  message: string;
}
