// Generated from schemas/ by schemas/codegen (json-schema-to-typescript); do not edit.
// Run `npm run generate` in schemas/codegen after changing a schema.

/**
 * The parts of a message or result, in order; null reads as none.
 */
export type Content = Part[] | null;

/**
 * The body of each Session event type Holdover reads, by type (schemas/event.json).
 */
export interface EventBodies {
  "request/header": RequestHeader;
  "assistant/message": AssistantMessage;
  "tool/call": ToolCall;
  "tool/result": ToolResult;
  "tool/ptc-dispatch": PTCDispatch;
  "user/message": UserMessage;
  "agent/inbox/spliced": InboxSpliced;
  "agent/inbox/claimed": InboxClaimed;
  "agent/inbox/discarded": InboxDiscarded;
  "turn/start": TurnStart;
  "turn/end": TurnEnd;
  "step/end": StepEnd;
}
/**
 * Body of request/header: one model request, recorded before it is sent, with the tools it offered. The latest header decides whether ask_user_question calls are timed (D2): timed when its ask_user_question tool has an inputSchema whose properties name timeout.
 */
export interface RequestHeader {
  /**
   * The Turn the request belongs to.
   */
  turn?: string;
  /**
   * The model asked.
   */
  model?: string;
  /**
   * The tools offered, in Holdover's shape: {name, description, inputSchema}. null reads as none.
   */
  tools: ToolSchema[] | null;
}
/**
 * One tool as the request offered it. The schema of its arguments goes under inputSchema only: an ask_user_question declared with parameters, input_schema or function.parameters leaves the Session untracked, and the question worker counts the event as rejected (reason tool_schema_key).
 */
export interface ToolSchema {
  /**
   * The model-facing tool name.
   */
  name: string;
  description?: string;
  /**
   * The JSON Schema of the tool's arguments.
   */
  inputSchema?: {} | boolean;
}
/**
 * Body of assistant/message: model text shown in the transcript.
 */
export interface AssistantMessage {
  /**
   * The Turn the message belongs to.
   */
  turn?: string;
  /**
   * The message id.
   */
  id: string;
  content: Content;
}
/**
 * One piece of message or tool-result content. Only text parts exist today.
 */
export interface Part {
  /**
   * The kind of part: text.
   */
  type: string;
  text: string;
}
/**
 * Body of tool/call: a model's tool call, recorded before it runs. An ask_user_question call under a timed request/header opens a question (D3); the runtime records it before it calls holdover.q.askTimed or holdover.q.ask.
 */
export interface ToolCall {
  /**
   * The Turn the call belongs to.
   */
  turn?: string;
  /**
   * The tool call id; for ask_user_question it is the question's id in every later request, reply and answer.
   */
  callId: string;
  /**
   * The tool called.
   */
  name: string;
  /**
   * The arguments as the model wrote them, any JSON; whether they are valid is the reader's question.
   */
  arguments: unknown;
}
/**
 * Body of tool/result: the outcome of a tool call. For an open ask_user_question call (D3): the pending JSON text, or the error code TOOL_OUTCOME_UNKNOWN, continues the question; a valid answer batch settles it; anything else removes it. The resume repair of a call recorded without a result (docs/agent-protocol.md) is the text "The tool call was interrupted after it was recorded.", isError true and error.code TOOL_OUTCOME_UNKNOWN.
 */
export interface ToolResult {
  /**
   * The Turn the call belongs to.
   */
  turn?: string;
  /**
   * The call this is the result of.
   */
  callId: string;
  /**
   * The tool called.
   */
  name?: string;
  content: Content;
  /**
   * The call failed.
   */
  isError?: boolean;
  error?: ToolError;
}
/**
 * The structured error of a failed tool call.
 */
export interface ToolError {
  /**
   * The error's name, as the runtime calls it.
   */
  name?: string;
  /**
   * A Holdover error code, such as ASK_ABORTED or TOOL_OUTCOME_UNKNOWN (the resume repair: D3).
   */
  code?: string;
}
/**
 * Body of tool/ptc-dispatch: one tool call made from inside run_code (programmatic tool calling) and its outcome. An ask_user_question sub-call whose content is pending enters the projection as continued, whatever the header says (D4).
 */
export interface PTCDispatch {
  /**
   * The Turn the call belongs to.
   */
  turn?: string;
  /**
   * The run_code call that made this one.
   */
  parentCallId: string;
  /**
   * The sub-call's id.
   */
  callId: string;
  /**
   * The tool called.
   */
  name: string;
  /**
   * The arguments as the program passed them, any JSON.
   */
  arguments: unknown;
  content: Content;
  /**
   * The sub-call failed.
   */
  isError?: boolean;
  error?: ToolError;
}
/**
 * Body of user/message: a message admitted into the agent's context. One whose source is a user-question-reply settles the call it names (D5).
 */
export interface UserMessage {
  /**
   * The Turn the message was admitted in.
   */
  turn?: string;
  message: Message;
}
/**
 * A user or agent message as the agent's context holds it.
 */
export interface Message {
  /**
   * The message id; a late answer's is the id its inbox message carries.
   */
  id: string;
  /**
   * user for every message Holdover reads.
   */
  role: string;
  content: Content;
  source: Source;
}
/**
 * Where a message came from. kind selects which other fields mean something; a late answer is kind user-question-reply with the callId it answers and outcome answered (D5, D6, G1).
 */
export interface Source {
  /**
   * A registered message-source kind.
   */
  kind: "user" | "user-question-reply";
  /**
   * user-question-reply: the ask_user_question call answered.
   */
  callId?: string;
  /**
   * user-question-reply: always answered.
   */
  outcome?: string;
  /**
   * user-question-reply: who gave the answer, as the gateway that carried it authenticated them (issue 10); absent when it came another way.
   */
  user?: string;
}
/**
 * Body of agent/inbox/spliced: a queued inbox message entered the agent's pending inbox. It carries the message, so a restarted runtime can restore it; a late answer shows as queued in the projection, never settled (D5, D8).
 */
export interface InboxSpliced {
  /**
   * The Turn open when it was spliced, if any.
   */
  turn?: string;
  message: Message;
  /**
   * The stream sequence (in SESSIONS, where the inbox subjects are) the message was read from.
   */
  inboxSeq?: number;
}
/**
 * Body of agent/inbox/claimed: the agent took a spliced message for its next step; a user/message with the same message id admits it.
 */
export interface InboxClaimed {
  /**
   * The Turn that claimed it.
   */
  turn?: string;
  /**
   * The spliced message's id.
   */
  messageId: string;
}
/**
 * Body of agent/inbox/discarded: a queued message was dropped unadmitted; a late answer's question becomes answerable again (D8, P5).
 */
export interface InboxDiscarded {
  /**
   * The Turn open when it was discarded, if any.
   */
  turn?: string;
  /**
   * The dropped message's id.
   */
  messageId: string;
  /**
   * Why, for people reading the log.
   */
  reason?: string;
}
/**
 * Body of turn/start: a Turn, one run of the agent's step loop, begins.
 */
export interface TurnStart {
  /**
   * The Turn's id.
   */
  turn: string;
}
/**
 * Body of turn/end: a Turn ends. Every late answer queued and not admitted by then is released (D8).
 */
export interface TurnEnd {
  /**
   * The Turn's id.
   */
  turn: string;
  /**
   * Why it ended, for people reading the log.
   */
  reason?: string;
}
/**
 * Body of step/end: a step boundary, where steered messages are admitted.
 */
export interface StepEnd {
  /**
   * The Turn's id.
   */
  turn: string;
  /**
   * The step's number within the Turn.
   */
  step: number;
}
/**
 * One entry of a Session log: one JSON message on holdover.session.<sid>.events in the SESSIONS stream. The type names the body in data; a type Holdover does not read is kept and passed over, so its data may be anything.
 */
export type Event = {
  /**
   * The event kind, such as tool/call. The kinds below are the ones Holdover reads.
   */
  type: string;
  /**
   * When the event happened, RFC 3339 (Holdover writes UTC with nanoseconds).
   */
  at: string;
  /**
   * The body; its schema is the one of its type.
   */
  data?: unknown;
};
