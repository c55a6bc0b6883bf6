// The model-facing ask_user_question tool, as Go's askuser package defines
// it (M1–M8): the schema for each mode, strict argument checks, the choice
// between ask and askTimed, and the results the model reads: the answer
// batch (M7), the pending object (M6), or a coded error. The conformance
// suite checks that the schema and texts are the Go tool's, byte for byte.

import { Code, HoldoverError, wire } from "./errors.js";
import type { ToolSchema } from "./generated/events.js";
import type { AgentRef, Answer, AskRequest, AskTimedRequest, Intent, Outcome, Question } from "./wire.js";

export const ToolName = "ask_user_question";
/** The timed wait in seconds when neither the model nor the configuration names one (M2). */
export const DefaultTimeout = 120;
/** The timed schema's timeout that waits until the user answers (M3). */
export const BlockingTimeout = -1;
/** The longest wait: the largest timer delay a JavaScript Client can run. */
export const MaxTimeoutMs = 2147483647;
export const MaxTimeoutSeconds = Math.floor(MaxTimeoutMs / 1000);
/** The kind of a late answer's recorded text (D6). */
export const ReplyKind = "answer_to_pending_question";

/** The question service as the tool uses it; a Caller is one. */
export interface Asker {
  ask(req: AskRequest, signal?: AbortSignal): Promise<Answer[]>;
  askTimed(req: AskTimedRequest, signal?: AbortSignal): Promise<Outcome>;
}

export interface AskToolConfig {
  /** "legacy" (the default) registers the blocking schema; "timed" adds timeout (M1, M2). */
  mode?: "legacy" | "timed";
  /** The timed wait in seconds when the model omits timeout: -1 or 1..2147483; 0 or absent means 120. */
  defaultTimeout?: number;
}

/** One model call of the tool. */
export interface AskCall {
  session: string;
  /** The model's tool call id; timed calls are keyed by it. */
  callId: string;
  /** The runtime instance that asks; timed calls require one. */
  agent?: AgentRef;
  /** The arguments as the model sent them (parsed JSON). */
  arguments: unknown;
}

/** What the runtime records as the call's tool/result. */
export interface ToolOutput {
  text: string;
  isError?: boolean;
  /** Set on errors only. */
  code?: string;
}

export function validTimeoutSeconds(s: number): boolean {
  return s === BlockingTimeout || (Number.isInteger(s) && s >= 1 && s <= MaxTimeoutSeconds);
}

const timeoutRule = `timeout must be -1 or a positive integer up to ${MaxTimeoutSeconds} seconds`;

export class AskUserQuestion {
  readonly timed: boolean;
  readonly defaultTimeout: number;
  private readonly schemaValue: ToolSchema;

  /** Registers the tool; an unknown mode or an invalid default fails now, not at the model's first question (M2). */
  constructor(
    private readonly svc: Asker,
    cfg: AskToolConfig = {},
  ) {
    const mode = cfg.mode ?? "legacy";
    if (mode !== "legacy" && mode !== "timed") {
      throw new HoldoverError(Code.BadRequest, `unknown ask_user_question mode ${JSON.stringify(mode)}; use "legacy" or "timed"`);
    }
    this.timed = mode === "timed";
    this.defaultTimeout = cfg.defaultTimeout || DefaultTimeout;
    if (!validTimeoutSeconds(this.defaultTimeout)) {
      throw new HoldoverError(Code.BadTimeout, `the configured default ${timeoutRule} (got ${cfg.defaultTimeout})`);
    }
    this.schemaValue = {
      name: ToolName,
      description: this.timed ? timedDescription : legacyDescription,
      inputSchema: inputSchema(this.timed, this.defaultTimeout),
    };
  }

  /** The tool as the model is offered it and as request/header records it. */
  schema(): ToolSchema {
    return structuredClone(this.schemaValue);
  }

  /** Runs one model call; every failure comes back as a coded tool error the model can read. */
  async call(call: AskCall, signal?: AbortSignal): Promise<ToolOutput> {
    try {
      const out = await this.ask(call, signal);
      if (out.pending) return pendingResult(call.callId);
      return answersResult(out.answers ?? []);
    } catch (err) {
      return failure(err, signal);
    }
  }

  private async ask(call: AskCall, signal?: AbortSignal): Promise<Outcome> {
    const { args, timeout } = this.parse(call.arguments);
    validateQuestions(args.questions);
    validateIntent(args.intent, args.questions);
    if (args.intent && timeout !== undefined && timeout !== BlockingTimeout) {
      throw new HoldoverError(Code.BadIntent, "a plan review waits until the user answers; omit timeout or pass -1");
    }
    if (this.timed) {
      if (!call.agent) throw new HoldoverError(Code.CallerNotLive, "timed questions require a live agent");
      if (call.callId === "") throw new HoldoverError(Code.BadRequest, "timed questions require the tool call id");
    }
    if (signal?.aborted) throw new HoldoverError(Code.AskAborted, "the question was aborted because its call was cancelled");

    const ask: AskRequest = { session: call.session, questions: args.questions };
    if (call.agent) ask.agent = call.agent;
    if (args.intent) ask.intent = args.intent;
    if (!this.timed) return { answers: await this.svc.ask(ask, signal) };
    const seconds = timeout ?? this.defaultTimeout;
    if (seconds === BlockingTimeout || args.intent) {
      ask.callId = call.callId;
      return { answers: await this.svc.ask(ask, signal) };
    }
    const req: AskTimedRequest = { session: call.session, callId: call.callId, questions: args.questions, timeoutMs: seconds * 1000 };
    if (call.agent) req.agent = call.agent;
    return this.svc.askTimed(req, signal);
  }

  /** Decodes the arguments strictly: an object of the schema's fields and nothing else. */
  private parse(raw: unknown): { args: { questions: Question[]; intent?: Intent }; timeout: number | undefined } {
    const top = strictObject(raw, "the arguments", ["questions", "timeout", "intent"]);
    const questions = arrayOf(top.questions, "questions", (q, i) => question(q, `questions[${i}]`));
    const args: { questions: Question[]; intent?: Intent } = { questions };
    if (top.intent !== undefined && top.intent !== null) {
      const it = strictObject(top.intent, "intent", ["kind", "approve"]);
      args.intent = { kind: str(it.kind, "intent.kind") as Intent["kind"], approve: str(it.approve, "intent.approve") };
    }
    if (top.timeout === undefined || top.timeout === null) return { args, timeout: undefined };
    if (!this.timed) throw new HoldoverError(Code.BadTimeout, "this ask_user_question takes no timeout: it waits until the user answers");
    if (typeof top.timeout !== "number" || !validTimeoutSeconds(top.timeout)) throw new HoldoverError(Code.BadTimeout, timeoutRule);
    return { args, timeout: top.timeout };
  }
}

/** The in-time result (M7): the batch as compact JSON, labels and custom text as the user gave them. */
export function answersResult(answers: Answer[]): ToolOutput {
  return { text: JSON.stringify({ answers: answers.map(compactAnswer) }) };
}

function compactAnswer(a: Answer): Answer {
  const out: Answer = { id: a.id, selected: a.selected ?? [] };
  if (a.custom) out.custom = a.custom;
  return out;
}

/** The result of a wait that ended without an answer batch (M6). */
export function pendingResult(callId: string): ToolOutput {
  const message =
    "No answer batch arrived before the timeout. " +
    "The question is pending: this is not a skipped answer. " +
    "Continue with useful work that does not depend on the answer. " +
    `The user may still answer; the reply will arrive as a user message of kind ${JSON.stringify(ReplyKind)} with callId ${JSON.stringify(callId)} and the original questions. ` +
    "Do not treat this as permission to do anything that needs the user's answer or approval.";
  return { text: JSON.stringify({ pending: true, callId, message }) };
}

const fixArguments = "Correct the arguments and call the tool again.";
const hints: Record<string, string> = {
  [Code.NoProvider]: "Nobody can answer questions in this Session right now; continue without the answer where you can, and say what you need from the user in your reply.",
  [Code.EmptyQuestions]: fixArguments,
  [Code.BadRequest]: fixArguments,
  [Code.BadTimeout]: fixArguments,
  [Code.BadIntent]: fixArguments,
};

/** A structured tool error; once the call's signal has aborted the call was aborted (W5), whatever the service said. */
function failure(err: unknown, signal?: AbortSignal): ToolOutput {
  let w = wire(err);
  if (signal?.aborted) w = { code: Code.AskAborted, message: "the question was aborted because its call was cancelled" };
  let text = `${w.code}: ${w.message}`;
  const hint = hints[w.code];
  if (hint) text = text.replace(/\.$/, "") + ". " + hint;
  return { text, isError: true, code: w.code };
}

/** At least one question (EMPTY_QUESTIONS), each with id and text, ids unique within the call (M4). */
export function validateQuestions(qs: Question[]): void {
  if (qs.length === 0) throw new HoldoverError(Code.EmptyQuestions, "at least one question is required");
  const seen = new Set<string>();
  qs.forEach((q, i) => {
    if (q.id === "") throw new HoldoverError(Code.BadRequest, `question ${i + 1} has no id`);
    if (q.question === "") throw new HoldoverError(Code.BadRequest, `question ${JSON.stringify(q.id)} has no text`);
    if (seen.has(q.id)) throw new HoldoverError(Code.BadRequest, `question id ${JSON.stringify(q.id)} is used twice in one call; ids must be unique within a call`);
    seen.add(q.id);
  });
}

/** A plan review (M8): one question carrying detail, whose options include the approving label. */
export function validateIntent(intent: Intent | undefined, qs: Question[]): void {
  if (!intent) return;
  if (intent.kind !== "plan-review") throw new HoldoverError(Code.BadIntent, `unknown intent kind ${JSON.stringify(intent.kind)}`);
  if (qs.length !== 1) throw new HoldoverError(Code.BadIntent, "a plan review asks exactly one question");
  const q = qs[0]!;
  if (!q.detail) throw new HoldoverError(Code.BadIntent, "a plan review question must carry the plan as detail");
  if (!(q.options ?? []).some((o) => o.label === intent.approve)) {
    throw new HoldoverError(Code.BadIntent, `the approve label ${JSON.stringify(intent.approve)} is not one of the question's options`);
  }
}

type Obj = Record<string, unknown>;

function strictObject(v: unknown, path: string, fields: string[]): Obj {
  if (v === null || typeof v !== "object" || Array.isArray(v)) {
    throw new HoldoverError(Code.BadRequest, `${path} must be an object, not ${jsonKind(v)}`);
  }
  for (const k of Object.keys(v)) {
    if (!fields.includes(k)) {
      throw new HoldoverError(Code.BadRequest, `the arguments are not a valid ${ToolName} input: unknown field ${JSON.stringify(k)}`);
    }
  }
  return v as Obj;
}

function arrayOf<T>(v: unknown, path: string, item: (x: unknown, i: number) => T): T[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw new HoldoverError(Code.BadRequest, `${path} must be an array, not ${jsonKind(v)}`);
  return v.map(item);
}

function str(v: unknown, path: string): string {
  if (v === undefined || v === null) return "";
  if (typeof v !== "string") throw new HoldoverError(Code.BadRequest, `${path} must be a string, not ${jsonKind(v)}`);
  return v;
}

function question(v: unknown, path: string): Question {
  const o = strictObject(v, path, ["id", "question", "header", "options", "multiSelect", "detail"]);
  const q: Question = { id: str(o.id, `${path}.id`), question: str(o.question, `${path}.question`) };
  const header = str(o.header, `${path}.header`);
  if (header) q.header = header;
  const options = arrayOf(o.options, `${path}.options`, (x, i) => {
    const op = strictObject(x, `${path}.options[${i}]`, ["label", "description"]);
    const out: { label: string; description?: string } = { label: str(op.label, `${path}.options[${i}].label`) };
    const d = str(op.description, `${path}.options[${i}].description`);
    if (d) out.description = d;
    return out;
  });
  if (options.length > 0) q.options = options;
  if (o.multiSelect !== undefined && o.multiSelect !== null) {
    if (typeof o.multiSelect !== "boolean") throw new HoldoverError(Code.BadRequest, `${path}.multiSelect must be a boolean, not ${jsonKind(o.multiSelect)}`);
    if (o.multiSelect) q.multiSelect = true;
  }
  const detail = str(o.detail, `${path}.detail`);
  if (detail) q.detail = detail;
  return q;
}

function jsonKind(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  return typeof v;
}

// The schema, built in the key order Go's askuser encodes it in (struct
// fields in order, property maps sorted), so both runtimes record the
// same bytes in request/header. The projection recognises a timed call by
// the top-level timeout property (D2), so its name and place are protocol.

type Schema = Record<string, unknown>;

function object(description: string, props: Record<string, Schema>, ...required: string[]): Schema {
  const s: Schema = { type: "object" };
  if (description) s.description = description;
  s.properties = sorted(props);
  if (required.length > 0) s.required = required;
  s.additionalProperties = false;
  return s;
}

function sorted(props: Record<string, Schema>): Record<string, Schema> {
  return Object.fromEntries(Object.keys(props).sort().map((k) => [k, props[k]!]));
}

const text = (description: string): Schema => ({ type: "string", description });

function inputSchema(timed: boolean, defaultTimeout: number): Schema {
  const option = object("One choice the user can pick.", {
    label: text(`What the user picks, shown and returned as written. End it with " (Recommended)" to suggest it.`),
    description: text("What choosing this option means."),
  }, "label");
  const q = object("One question.", {
    id: text("Stable id of the question, unique within this call; its answer carries the same id."),
    question: text("The question, as a complete sentence."),
    header: text("A short label shown above the question."),
    options: { type: "array", description: "The choices offered; the user may also type a custom answer.", items: option },
    multiSelect: { type: "boolean", description: "Let the user pick more than one option." },
    detail: text("Markdown shown beside the question, such as the plan under review."),
  }, "id", "question");
  const props: Record<string, Schema> = {
    questions: { type: "array", description: "The questions to ask, answered together as one batch.", items: q, minItems: 1 },
    intent: object(intentDescription(timed), {
      kind: { type: "string", enum: ["plan-review"] },
      approve: text("The option label that approves the plan."),
    }, "kind", "approve"),
  };
  if (timed) {
    props.timeout = { type: "integer", description: timeoutDescription(defaultTimeout), minimum: BlockingTimeout, maximum: MaxTimeoutSeconds };
  }
  return object("", props, "questions");
}

function intentDescription(timed: boolean): string {
  const plan = "Only for plan review: ask one question whose detail is the plan and whose options include the approving label.";
  return timed ? plan + " A plan review always waits until the user answers, so omit timeout or pass -1." : plan;
}

function timeoutDescription(defaultTimeout: number): string {
  const def = defaultTimeout === BlockingTimeout ? "default -1, which waits until the user answers" : `default ${defaultTimeout}`;
  return `Seconds to wait for the user's answers before the call returns pending (${def}). ` +
    "Omit it unless the user gave you a duration. " +
    "Use -1 only when an answer is required before you can proceed: the call then waits until the user answers.";
}

const legacyDescription = `Ask the user one or more structured questions and wait until they answer.
Each question has a stable id, unique within the call. The result is {"answers":[{"id","selected":[...],"custom"?}]}: one item per question, "selected" lists the chosen option labels exactly as written, and "custom" is text the user typed instead. A skipped question is an item with an empty "selected" and no "custom".`;

const timedDescription = `Ask the user one or more structured questions. The call waits at most "timeout" seconds for the user's answers.
Each question has a stable id, unique within the call; answers name questions by that id, now and if they arrive later.
The result is exactly one of two JSON objects:
- {"answers":[{"id","selected":[...],"custom"?}]} when the user answered in time: one item per question, "selected" lists the chosen option labels exactly as written, and "custom" is text the user typed instead. A skipped question is an item with an empty "selected" and no "custom".
- {"pending":true,"callId":...,"message":...} when no answer batch arrived before the timeout. Pending is not a skipped answer and not permission: the user can still answer, and the answer then arrives later as a user message of kind "answer_to_pending_question" naming this call id. Meanwhile continue only with work that does not depend on the answer.`;
