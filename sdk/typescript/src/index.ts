// @holdover/agent: Holdover for TypeScript agent runtimes. See README.md.

export { Code, HoldoverError, codeOf, wire } from "./errors.js";
export type { ConnectOptions } from "./nats.js";
export { AgentInboxPrefix, AgentRole } from "./names.js";
export { steer } from "./steer.js";
export { Runtime, childSession, type RuntimeOptions } from "./runtime.js";
export { Session, InterruptedText, newID, text, withTurn } from "./session.js";
export { SessionState, joinText, type ChatMessage, type ModelToolCall, type InboxItem } from "./state.js";
export { SessionLog, PrevHeader, type LoggedEvent, type OtherEvent, type EventType } from "./sessionlog.js";
export { Registry } from "./liveroot.js";
export { Caller, type CallerOptions } from "./caller.js";
export {
  AskUserQuestion,
  BlockingTimeout,
  DefaultTimeout,
  ToolName,
  answersResult,
  pendingResult,
  type AskCall,
  type AskToolConfig,
  type Asker,
  type ToolOutput,
} from "./asktool.js";
export {
  askUserQuestionTool,
  failure,
  runAgent,
  runTask,
  subagentTool,
  type AgentOptions,
  type Model,
  type ModelRequest,
  type ModelResponse,
  type Tool,
  type ToolCallContext,
} from "./agent.js";
export * from "./wire.js";
