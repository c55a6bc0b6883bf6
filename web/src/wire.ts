// The JSON shapes the Client reads and writes: the question types, the
// Session events and the projection view, as the schemas in schemas/
// define them. These are the shapes as the Client holds them (lists never
// null; fields it does not use left out); the checks at the end of this
// file fail `npm run typecheck` when the schemas' generated types
// (./generated/) change in a way they do not follow.

import type { Assert, Reads } from "./conforms";
import type * as events from "./generated/events";
import type * as schema from "./generated/wire";
import { isRecord, isStringArray } from "./json";

/** One choice of a question. A label ending in "(Recommended)" is shown pre-selected. */
export interface Option {
  label: string;
  description?: string;
}

/** One structured question of an ask_user_question call; its id names it in the answer batch. */
export interface Question {
  id: string;
  question: string;
  header?: string;
  options?: Option[];
  multiSelect?: boolean;
  /** Markdown shown beside the question; plan review requires it. */
  detail?: string;
}

/** The answer to one question. Empty `selected` and no `custom` is a skipped question. */
export interface Answer {
  id: string;
  selected: string[];
  custom?: string;
}

/** A plan-review intent (M8). */
export interface Intent {
  kind: string;
  approve: string;
}

/** A stable error code and its message, as every process boundary carries errors. */
export interface WireError {
  code: string;
  message: string;
}

/** The error codes the Client produces or branches on (SPEC §8). */
export const Codes = {
  askTimedOut: "ASK_TIMED_OUT",
  askCancelled: "ASK_CANCELLED",
  askAborted: "ASK_ABORTED",
  replyQueued: "REPLY_QUEUED",
  badAnswer: "BAD_ANSWER",
  toolOutcomeUnknown: "TOOL_OUTCOME_UNKNOWN",
  badRequest: "BAD_REQUEST",
  conflict: "CONFLICT",
  notFound: "NOT_FOUND",
  // Why a late answer was refused (AnswerResult.reason, D6).
  callOpen: "CALL_OPEN",
  callUnknown: "CALL_UNKNOWN",
  callSettled: "CALL_SETTLED",
  noAgent: "NO_AGENT",
} as const;

// ---- projection/view.go ----

export type CallStatus = "open" | "continued";

/** A late reply spliced into the agent's inbox, not yet admitted (D5, D8). */
export interface Queued {
  messageId: string;
  answers: Answer[];
  seq: number;
}

/** An active question call of the projection. */
export interface Call {
  callId: string;
  status: CallStatus;
  questions: Question[];
  parentCallId?: string;
  blocking?: boolean;
  queued?: Queued;
  seq: number;
}

/** A call with its answer batch; `late` when an admitted reply settled it. */
export interface Settled {
  callId: string;
  questions: Question[];
  answers: Answer[];
  late: boolean;
  seq: number;
}

/** The userQuestions projection of one Session. */
export interface View {
  active: Call[];
  settled: Settled[];
  timed: boolean;
  lastSeq: number;
}

// ---- events/ ----

/** One piece of message content; only text parts exist today. */
export interface Part {
  type: string;
  text: string;
}

/** Where a message came from; `kind` selects which other fields mean something. */
export interface Source {
  kind: string;
  callId?: string;
  outcome?: string;
  /** Who gave a late answer, as the gateway that carried it authenticated them. */
  user?: string;
}

/** The message-source kind of a late answer (D6). */
export const SourceUserQuestionReply = "user-question-reply";

/** The `kind` inside a late answer's recorded JSON text. */
export const ReplyKind = "answer_to_pending_question";

export interface Message {
  id: string;
  role: string;
  content: Part[];
  source: Source;
}

/** The body of a tool/result event. */
export interface ToolResult {
  turn?: string;
  callId: string;
  name?: string;
  content: Part[];
  isError?: boolean;
  error?: { name?: string; code?: string };
}

/** One Session event as the gateway forwards it: the recorded type and data, and its Session seq. */
export interface SessionEvent {
  seq: number;
  type: string;
  at: string;
  data: unknown;
}

/** Concatenates the text of message or result content. */
export function joinText(parts: readonly Part[] | undefined): string {
  return (parts ?? []).map((p) => p.text).join("");
}

/** An error that crossed the gateway with a stable code; `code` is what callers branch on. */
export class RemoteError extends Error {
  readonly code: string;
  constructor(error: WireError) {
    super(error.message);
    this.name = "RemoteError";
    this.code = error.code;
  }
  toWire(): WireError {
    return { code: this.code, message: this.message };
  }
}

/** The code of err when it carries one. */
export function codeOf(err: unknown): string | undefined {
  return err instanceof RemoteError ? err.code : undefined;
}

/** Reads a JSON answers list as recorded by another process, or undefined when it is not one. */
export function readAnswers(value: unknown): Answer[] | undefined {
  if (!Array.isArray(value)) return undefined;
  const answers: Answer[] = [];
  for (const a of value) {
    if (!isRecord(a) || typeof a.id !== "string" || a.id === "") return undefined;
    const answer: Answer = { id: a.id, selected: isStringArray(a.selected) ? a.selected : [] };
    if (typeof a.custom === "string" && a.custom !== "") answer.custom = a.custom;
    answers.push(answer);
  }
  return answers;
}

/** Reads a JSON questions list as recorded by another process, or undefined when it is not one. */
export function readQuestions(value: unknown): Question[] | undefined {
  if (!Array.isArray(value)) return undefined;
  const questions: Question[] = [];
  for (const q of value) {
    if (!isRecord(q) || typeof q.id !== "string" || q.id === "" || typeof q.question !== "string") return undefined;
    const question: Question = { id: q.id, question: q.question };
    if (typeof q.header === "string") question.header = q.header;
    if (typeof q.detail === "string") question.detail = q.detail;
    if (q.multiSelect === true) question.multiSelect = true;
    if (q.options !== undefined) {
      if (!Array.isArray(q.options)) return undefined;
      const options: Option[] = [];
      for (const o of q.options) {
        if (!isRecord(o) || typeof o.label !== "string") return undefined;
        options.push(typeof o.description === "string" ? { label: o.label, description: o.description } : { label: o.label });
      }
      question.options = options;
    }
    questions.push(question);
  }
  return questions;
}

// ---- checked against the schemas ----

export type WireConformance = [
  Assert<Reads<Option, schema.Option>>,
  Assert<Reads<Question, schema.Question>>,
  Assert<Reads<Answer, schema.Answer>>,
  Assert<Reads<Intent, schema.Intent>>,
  Assert<Reads<WireError, schema.WireError>>,
  Assert<Reads<Queued, schema.Queued>>,
  Assert<Reads<Call, schema.Call>>,
  Assert<Reads<Settled, schema.Settled>>,
  Assert<Reads<View, schema.View>>,
  Assert<Reads<Part, events.Part>>,
  Assert<Reads<Source, events.Source>>,
  Assert<Reads<Message, events.Message>>,
  Assert<Reads<ToolResult, events.ToolResult>>,
];
