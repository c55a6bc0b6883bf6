// The frames of the Client↔gateway WebSocket protocol (docs/protocol.md).
// Every frame is one JSON object with a `type`. The verbs are generic: the
// gateway maps them onto NATS subjects by rule and never looks inside a
// question payload. The frames' types are generated from their schemas
// (schemas/websocket/, in ../generated/wire.ts); this file says how the
// Client reads the gateway's, so a frame the schemas add or change that it
// does not read fails `npm run typecheck`.

import type { ClientFrames, EventsFrame, GatewayFrames, SummaryFrame, ViewFrame, WelcomeFrame } from "../generated/wire";
import type * as schema from "../generated/wire";
import type { Answer, Call, Question, SessionEvent, Settled, View, WireError } from "../wire";
import { readAnswers, readQuestions } from "../wire";
import type { Assert, Normalized, Reads } from "../conforms";
import { isRecord } from "../json";

/**
 * The protocol version the Client speaks, sent in hello; the welcome names
 * the one spoken on the connection, one the gateway speaks. From 2 on a
 * message from the gateway may carry several frames (messageFrames); this
 * Client reads both forms.
 */
export const protocolVersion = 2 satisfies WelcomeFrame["protocol"];

/** The Remote Event name of a question request; the only one this Client answers. */
export const questionRequestEvent = "user-questions/request";

/** The RPC and stream methods the question UI uses. */
export const Methods = {
  answer: "userQuestions.answer",
  attachWait: "userQuestions.attachWait",
  /** The Session's agent discards a queued inbox message (D8). */
  discard: "session.discard",
  /** The Session's projection, caught up, with replies stored but not yet read by an agent shown queued. */
  view: "userQuestions.view",
} as const;

/** A frame the Client sends (schemas/websocket/client/). */
export type ClientFrame = ClientFrames[keyof ClientFrames];

/**
 * How the Client holds a gateway frame once read: its schema's type with
 * lists never null (Normalized), except for what it reads into its own
 * types: the welcome's version as a number (the rest of the welcome goes
 * unused), events and views as ../wire.ts has them (a null view reads as
 * an empty one), and summaries with their deadlines in milliseconds.
 */
interface Held {
  welcome: Pick<WelcomeFrame, "type" | "clientId"> & { protocol: number };
  events: Omit<Normalized<EventsFrame>, "events"> & { events: SessionEvent[] };
  view: Omit<Normalized<ViewFrame>, "view"> & { view: View };
  summary: Omit<Normalized<SummaryFrame>, "sessions"> & { sessions: SessionSummary[] };
}
type HeldFrame<T extends keyof GatewayFrames> = T extends keyof Held ? Held[T] : Normalized<GatewayFrames[T]>;

/** A frame the gateway sends (schemas/websocket/gateway/), as the Client holds it. */
export type ServerFrame = { [T in keyof GatewayFrames]: HeldFrame<T> }[keyof GatewayFrames];

/** A frame that is not valid JSON or lacks a field its type requires. */
export class ProtocolError extends Error {
  override name = "ProtocolError";
}

/**
 * Decodes one message from the gateway into the frames it carries, in
 * order: one frame object, or from protocol 2 on an array of them (the
 * gateway batches what queued for the connection). Throws a ProtocolError
 * for a message that is not JSON or an empty array; each frame is read
 * with readServerFrame, so one malformed frame costs no other.
 */
export function messageFrames(text: string): unknown[] {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw new ProtocolError("frame is not JSON");
  }
  if (!Array.isArray(v)) return [v];
  if (v.length === 0) throw new ProtocolError("message holds no frames");
  return v;
}

/**
 * Reads one decoded frame from the gateway. Returns undefined for a frame
 * type this version does not know (a newer gateway may send more); throws
 * a ProtocolError for anything malformed.
 */
export function readServerFrame(v: unknown): ServerFrame | undefined {
  if (!isRecord(v) || typeof v.type !== "string") throw new ProtocolError("frame has no type");
  if (!Object.hasOwn(readers, v.type)) return undefined;
  return readers[v.type as keyof GatewayFrames](new Fields(v), v);
}

/** The reader of each gateway frame: every type the schemas name has one. */
const readers: { [T in keyof GatewayFrames]: (f: Fields, v: Record<string, unknown>) => HeldFrame<T> } = {
  welcome: (f) => ({ type: "welcome", protocol: f.number("protocol"), clientId: f.string("clientId") }),
  events: (f) => ({ type: "events", id: f.string("id"), session: f.string("session"), events: f.list("events", sessionEvent) }),
  // null: the Session has no projection yet, which reads as one with no questions.
  view: (f, v) => ({ type: "view", id: f.string("id"), session: f.string("session"), view: v.view === null ? emptyView() : view(f.record("view")) }),
  ready: (f, v) => (v.session === undefined ? { type: "ready", id: f.string("id") } : { type: "ready", id: f.string("id"), session: f.string("session") }),
  summary: (f) => ({ type: "summary", id: f.string("id"), sessions: f.list("sessions", sessionSummary) }),
  request: (f, v) => ({ type: "request", id: f.string("id"), session: f.string("session"), event: f.string("event"), payload: v.payload }),
  cancel: (f, v) => {
    const frame: HeldFrame<"cancel"> = { type: "cancel", id: f.string("id"), session: f.string("session") };
    if (typeof v.reason === "string" && v.reason !== "") frame.reason = v.reason;
    return frame;
  },
  frame: (f, v) => ({ type: "frame", id: f.string("id"), data: v.data }),
  close: (f, v) => {
    const frame: HeldFrame<"close"> = { type: "close", id: f.string("id") };
    if (v.error !== undefined) frame.error = wireError(f.record("error"));
    return frame;
  },
  result: (f, v) => ({ type: "result", id: f.string("id"), result: v.result }),
  error: (f, v) => {
    const frame: HeldFrame<"error"> = { type: "error", code: f.string("code"), message: f.string("message") };
    if (v.id !== undefined) frame.id = f.string("id");
    return frame;
  },
};

/** Reads required fields of one object, naming the first one that is missing. */
class Fields {
  constructor(private readonly v: Record<string, unknown>, private readonly where = "frame") {}

  string(name: string): string {
    const x = this.v[name];
    if (typeof x !== "string" || x === "") throw new ProtocolError(`${this.where} field ${name} must be a non-empty string`);
    return x;
  }
  number(name: string): number {
    const x = this.v[name];
    if (typeof x !== "number" || !Number.isFinite(x)) throw new ProtocolError(`${this.where} field ${name} must be a number`);
    return x;
  }
  record(name: string): Record<string, unknown> {
    const x = this.v[name];
    if (!isRecord(x)) throw new ProtocolError(`${this.where} field ${name} must be an object`);
    return x;
  }
  /** A list; null reads as empty, since Go writes a nil slice as null. */
  list<T>(name: string, read: (x: unknown) => T): T[] {
    const x = this.v[name] ?? [];
    if (!Array.isArray(x)) throw new ProtocolError(`${this.where} field ${name} must be a list`);
    return x.map(read);
  }
}

function sessionEvent(x: unknown): SessionEvent {
  if (!isRecord(x)) throw new ProtocolError("an event must be an object");
  const f = new Fields(x, "event");
  return { seq: f.number("seq"), type: f.string("type"), at: typeof x.at === "string" ? x.at : "", data: x.data };
}

/**
 * One Session of the inbox feed (schema.SessionSummary): its projection's
 * active calls, how many calls it settled, its last folded seq, and the
 * Host deadlines of its live timed waits by call id (display only: a
 * countdown comes from a claim, W3), in milliseconds since the epoch.
 */
export interface SessionSummary {
  session: string;
  active: Call[];
  settled: number;
  lastSeq: number;
  /** Milliseconds since the epoch, by call id. */
  deadlines: Record<string, number>;
}

function sessionSummary(x: unknown): SessionSummary {
  if (!isRecord(x)) throw new ProtocolError("a session summary must be an object");
  const f = new Fields(x, "session summary");
  const deadlines: Record<string, number> = {};
  if (isRecord(x.deadlines)) {
    for (const [callId, at] of Object.entries(x.deadlines)) {
      const ms = typeof at === "string" ? Date.parse(at) : NaN;
      if (Number.isFinite(ms)) deadlines[callId] = ms;
    }
  }
  return {
    session: f.string("session"),
    active: f.list("active", call),
    settled: typeof x.settled === "number" ? x.settled : 0,
    lastSeq: typeof x.lastSeq === "number" ? x.lastSeq : 0,
    deadlines,
  };
}

/** The view of a Session whose projection has no entry: no question events folded yet. */
export function emptyView(): View {
  return { active: [], settled: [], timed: false, lastSeq: 0 };
}

/** Reads the result of the userQuestions.view call: a projection view, or null for a Session without one. */
export function readView(x: unknown): View {
  if (x === null) return emptyView();
  if (!isRecord(x)) throw new ProtocolError("a view must be an object");
  return view(x);
}

/** Reads a projection view, rebuilding each call from checked fields. */
function view(x: Record<string, unknown>): View {
  const f = new Fields(x, "view");
  return { active: f.list("active", call), settled: f.list("settled", settled), timed: x.timed === true, lastSeq: f.number("lastSeq") };
}

function call(x: unknown): Call {
  if (!isRecord(x)) throw new ProtocolError("an active call must be an object");
  const f = new Fields(x, "active call");
  const status = f.string("status");
  if (status !== "open" && status !== "continued") throw new ProtocolError(`active call status ${status} is unknown`);
  const c: Call = { callId: f.string("callId"), status, questions: questions(x.questions), seq: f.number("seq") };
  if (typeof x.parentCallId === "string" && x.parentCallId !== "") c.parentCallId = x.parentCallId;
  if (x.blocking === true) c.blocking = true;
  if (x.queued !== undefined && x.queued !== null) {
    const q = new Fields(f.record("queued"), "queued reply");
    c.queued = { messageId: q.string("messageId"), answers: answers(f.record("queued").answers), seq: q.number("seq") };
  }
  return c;
}

function settled(x: unknown): Settled {
  if (!isRecord(x)) throw new ProtocolError("a settled call must be an object");
  const f = new Fields(x, "settled call");
  return { callId: f.string("callId"), questions: questions(x.questions), answers: answers(x.answers), late: x.late === true, seq: f.number("seq") };
}

function questions(x: unknown): Question[] {
  const qs = readQuestions(x ?? []);
  if (!qs) throw new ProtocolError("a call's questions are malformed");
  return qs;
}

function answers(x: unknown): Answer[] {
  const as = readAnswers(x ?? []);
  if (!as) throw new ProtocolError("a call's answers are malformed");
  return as;
}

function wireError(x: Record<string, unknown>): WireError {
  const f = new Fields(x, "error");
  return { code: f.string("code"), message: typeof x.message === "string" ? x.message : "" };
}

// ---- checked against the schemas ----

export type FrameConformance = [
  Assert<Reads<Omit<SessionEvent, "data">, Omit<schema.SessionEvent, "data">>>,
  Assert<Reads<Omit<SessionSummary, "deadlines">, Omit<schema.SessionSummary, "deadlines">>>,
];
