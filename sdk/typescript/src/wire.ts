// The request, reply, frame and record shapes of the wire that schemas/
// does not describe yet. The Session events, the inbox message and its
// source are generated from schemas/ (generated/events.ts) and re-exported
// here; the shapes below follow the Go types named beside each one, field
// for field, and move to generated files when their schemas land (see
// sdk/typescript/README.md, "Wire types"). The conformance suite checks
// them against the Go worker, whose request decoding refuses any field it
// does not know.

export type {
  Event,
  EventBodies,
  Message,
  Part,
  Source,
  ToolError,
  ToolSchema,
} from "./generated/events.js";

/** One choice of a question (holdover.Option). */
export interface Option {
  label: string;
  description?: string;
}

/** One structured question of a call (holdover.Question). */
export interface Question {
  id: string;
  question: string;
  header?: string;
  options?: Option[];
  multiSelect?: boolean;
  detail?: string;
}

/** The answer to one question; a skipped one has empty `selected` and no `custom` (holdover.Answer). */
export interface Answer {
  id: string;
  selected: string[];
  custom?: string;
}

/** A plan-review intent (holdover.Intent, M8). */
export interface Intent {
  kind: "plan-review";
  approve: string;
}

/** The runtime instance that asks (holdover.AgentRef, M9). */
export interface AgentRef {
  instance: string;
  epoch: number;
  owner?: string;
}

/** The body of holdover.q.ask (holdover.AskRequest). */
export interface AskRequest {
  session: string;
  callId?: string;
  agent?: AgentRef;
  questions: Question[];
  intent?: Intent;
}

/** The body of holdover.q.askTimed (holdover.AskTimedRequest). */
export interface AskTimedRequest {
  session: string;
  callId: string;
  agent?: AgentRef;
  questions: Question[];
  timeoutMs: number;
}

/** How a timed wait ended (holdover.Outcome). */
export interface Outcome {
  answers?: Answer[];
  pending?: boolean;
}

/** An answer batch (holdover.Batch): the reply of ask, and the in-time tool result (M7). */
export interface Batch {
  answers: Answer[];
}

/** The body of holdover.q.answer (holdover.AnswerRequest, D6). */
export interface AnswerRequest {
  session: string;
  callId: string;
  answers: Answer[];
}

/** The reply of holdover.q.answer (holdover.AnswerResult). */
export interface AnswerResult {
  accepted: boolean;
  messageId?: string;
}

/** The accepted frame of ask and askTimed (userquestions.Accepted). */
export interface Accepted {
  owner: string;
  requestId: string;
}

/** A liveRoots value (liveroot.Record). */
export interface LiveRootRecord {
  instance: string;
  epoch: number;
  owner?: string;
  since: string;
}

/** A request on holdover.runtime.resume (liveroot.ResumeRequest, D7). */
export interface ResumeRequest {
  session: string;
}

/** The pool's reply to a resume request (liveroot.ResumeReply). */
export interface ResumeReply {
  instance?: string;
  error?: WireError;
}

/** A request on holdover.session.<sid>.discard (runtime.DiscardRequest). */
export interface DiscardRequest {
  messageId: string;
  reason?: string;
}

/** The live root's reply to a discard (runtime.DiscardReply). */
export interface DiscardReply {
  error?: WireError;
}

/** An error as it crosses NATS. */
export interface WireError {
  code: string;
  message: string;
}

/** The pending tool result of a timed call (holdover.Pending, M6). */
export interface Pending {
  pending: true;
  callId: string;
  message: string;
}

/** The recorded text of a late answer (events.Reply, D6). */
export interface Reply {
  kind: "answer_to_pending_question";
  tool: "ask_user_question";
  callId: string;
  questions: Question[];
  answers: Answer[];
}
