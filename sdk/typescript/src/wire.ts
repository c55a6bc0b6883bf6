// The wire's shapes, all generated from schemas/ by schemas/codegen
// (generated/events.ts: the Session events, the inbox message and its
// source; generated/wire.ts: the question service's requests, replies and
// frames, discard, resume, the liveRoots record, the late reply's text and
// the tool's arguments and results). Nothing here is written by hand but
// the SDK's names for a few of them, so a schema change the SDK does not
// follow fails `npm run typecheck`, and `make test-schemas` fails on a
// stale copy. The Go worker decodes every request strictly and refuses a
// field it does not know.

export type {
  Event,
  EventBodies,
  Message,
  Part,
  Source,
  ToolError,
  ToolSchema,
} from "./generated/events.js";

export type {
  AcceptedFrame,
  AgentRef,
  Answer,
  AnswerBatch,
  AnswerRequest,
  AnswerResult,
  AskReply,
  AskRequest,
  AskTimedReply,
  AskTimedRequest,
  DiscardReply,
  DiscardRequest,
  ErrorReply,
  Intent,
  LiveRootRecord,
  Option,
  PendingResult,
  Question,
  ReplyText,
  ResumeReply,
  ResumeRequest,
  ToolArguments,
  WireError,
} from "./generated/wire.js";

import type { AcceptedFrame, AskReply, AskTimedReply, PendingResult, ReplyText } from "./generated/wire.js";

/** The accepted frame of ask and askTimed (userquestions.Accepted). */
export type Accepted = AcceptedFrame;
/** How a timed wait ended (holdover.Outcome). */
export type Outcome = AskTimedReply;
/** An answer batch (holdover.Batch): the reply of ask, and the in-time tool result (M7). */
export type Batch = AskReply;
/** The pending tool result of a timed call (holdover.Pending, M6). */
export type Pending = PendingResult;
/** The recorded text of a late answer (events.Reply, D6). */
export type Reply = ReplyText;
