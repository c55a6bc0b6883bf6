// Session logs: one JetStream subject per Session in the SESSIONS stream,
// one JSON event {type, at, data} per message (schemas/event.json).
//
// Appends are fenced: each names the Session seq it follows in
// Nats-Expected-Last-Subject-Sequence, so a stale or second writer fails
// with CONFLICT instead of interleaving its events, and carries it in
// Holdover-Prev-Seq, so a reader can tell it has seen every earlier event.
// An append is a runtime's most frequent request: it is published and its
// ack read here, through the connection's Replies, rather than through the
// JetStream client's layers.

import { JetStreamApiError, PubHeaders, type ApiError } from "@nats-io/jetstream";
import { headers } from "@nats-io/nats-core";
import { Code, HoldoverError, wrap } from "./errors.js";
import type { EventBodies } from "./generated/events.js";
import { SessionsStream, eventsSubject } from "./names.js";
import { decoder, encoder, isConflict, type Conn } from "./nats.js";

/** The header that carries the Session seq an event was appended after (sessionlog.PrevHeader). */
export const PrevHeader = "Holdover-Prev-Seq";

/** The longest encoded event (events.MaxEventBytes). */
export const MaxEventBytes = (1 << 20) - (4 << 10);

/** How long an append waits for its ack: the JetStream client's default. */
const appendTimeoutMs = 5000;

export type EventType = keyof EventBodies;

/** One event as the log stores it; seq is its Session seq. */
export type LoggedEvent = {
  [T in EventType]: { seq: number; type: T; at: string; data: EventBodies[T] };
}[EventType];

/** An event of a type this SDK does not read, or one that did not parse. */
export interface OtherEvent {
  seq: number;
  type: string;
  at: string;
  data: unknown;
}

const known = new Set<string>([
  "request/header",
  "assistant/message",
  "tool/call",
  "tool/result",
  "tool/ptc-dispatch",
  "user/message",
  "agent/inbox/spliced",
  "agent/inbox/claimed",
  "agent/inbox/discarded",
  "turn/start",
  "turn/end",
  "step/end",
]);

export function isKnown(e: LoggedEvent | OtherEvent): e is LoggedEvent {
  return known.has(e.type);
}

/** Encodes an event as one log message: the envelope of schemas/event.json. */
export function encodeEvent<T extends EventType>(type: T, data: EventBodies[T], at: Date): Uint8Array {
  const bytes = type === "request/header" ? encodeRequestHeader(data as EventBodies["request/header"], at) : encoder.encode(JSON.stringify({ type, at: at.toISOString(), data }));
  if (bytes.length > MaxEventBytes) {
    throw new HoldoverError(Code.BadRequest, `event ${type} is ${bytes.length} bytes, over the ${MaxEventBytes} byte limit`);
  }
  return bytes;
}

/** The encoding of each tool schema made with fixedSchema. */
const encodedSchemas = new WeakMap<object, Uint8Array>();

/**
 * Freezes a tool schema, deeply, and encodes it once: every request/header
 * of every agent that offers the tool carries it, and encodeEvent copies
 * the encoding instead of encoding the schema again.
 */
export function fixedSchema<T extends object>(schema: T): T {
  const freeze = (v: unknown): void => {
    if (v === null || typeof v !== "object" || Object.isFrozen(v)) return;
    Object.freeze(v);
    for (const x of Object.values(v)) freeze(x);
  };
  freeze(schema);
  encodedSchemas.set(schema, encoder.encode(JSON.stringify(schema)));
  return schema;
}

/** Encodes a request/header as encodeEvent does, copying the encoding of tools made with fixedSchema. */
function encodeRequestHeader(data: EventBodies["request/header"], at: Date): Uint8Array {
  const { tools, ...rest } = data;
  const encoded = tools?.map((t) => encodedSchemas.get(t));
  if (!tools || tools.length === 0 || !encoded?.every((b) => b !== undefined)) {
    return encoder.encode(JSON.stringify({ type: "request/header", at: at.toISOString(), data }));
  }
  // {"type":…,"at":…,"data":{…rest,"tools":[…]}}, as JSON.stringify orders it.
  const head = JSON.stringify({ type: "request/header", at: at.toISOString(), data: rest }).slice(0, -2);
  const parts = [encoder.encode(head + (head.endsWith("{") ? "" : ",") + '"tools":[')];
  for (const [i, schema] of encoded.entries()) parts.push(...(i === 0 ? [schema!] : [comma, schema!]));
  parts.push(closeTools);
  return Buffer.concat(parts);
}

const comma = encoder.encode(",");
const closeTools = encoder.encode("]}}");

export class SessionLog {
  constructor(private readonly conn: Conn) {}

  /**
   * Records an event after seq `after` (0 for the first) and returns its
   * Session seq; CONFLICT when the Session's last event is not `after`.
   */
  async append<T extends EventType>(sid: string, after: number, type: T, data: EventBodies[T], at = new Date()): Promise<number> {
    const subject = eventsSubject(sid);
    const payload = encodeEvent(type, data, at);
    const h = headers();
    h.append(PrevHeader, String(after));
    h.append(PubHeaders.ExpectedLastSubjectSequenceHdr, String(after));
    try {
      const reply = await this.conn.replies.request(subject, payload, { timeout: appendTimeoutMs, headers: h });
      const ack = JSON.parse(decoder.decode(reply.data)) as { seq?: number; error?: ApiError };
      if (ack.error) throw new JetStreamApiError(ack.error);
      if (typeof ack.seq !== "number") throw new Error(`the reply is not a JetStream ack: ${decoder.decode(reply.data)}`);
      return ack.seq;
    } catch (err) {
      if (isConflict(err)) {
        throw wrap(err, Code.Conflict, `session ${sid} has moved past seq ${after}: another writer appended first`);
      }
      throw wrap(err, Code.Internal, `append to session ${sid}`);
    }
  }

  /** The Session seq of the log's last event, 0 when it has none. */
  async last(sid: string): Promise<number> {
    const m = await this.conn.jsm.direct.getMessage(SessionsStream, { last_by_subj: eventsSubject(sid) }).catch((err: unknown) => {
      throw wrap(err, Code.Internal, `read the last event of session ${sid}`);
    });
    return m?.seq ?? 0;
  }

  /**
   * The Session's events after seq `after`, up to its last event at the
   * time of the call, in order. An event that does not parse is returned
   * as an OtherEvent with its raw text as data, never dropped.
   */
  async read(sid: string, after = 0): Promise<Array<LoggedEvent | OtherEvent>> {
    const subject = eventsSubject(sid);
    const last = await this.last(sid);
    const out: Array<LoggedEvent | OtherEvent> = [];
    let next = after + 1;
    while (next <= last) {
      const batch = await this.conn.jsm.direct.getBatch(SessionsStream, { seq: next, next_by_subj: subject, batch: 256 });
      let n = 0;
      for await (const m of batch) {
        n++;
        if (m.seq > last) break;
        out.push(decodeStored(m.seq, m.data));
        next = m.seq + 1;
      }
      if (n === 0) throw new HoldoverError(Code.Internal, `read session ${sid}: no event arrived before seq ${last}`);
    }
    return out;
  }
}

function decodeStored(seq: number, data: Uint8Array): LoggedEvent | OtherEvent {
  const text = decoder.decode(data);
  try {
    const e = JSON.parse(text) as { type?: unknown; at?: unknown; data?: unknown };
    if (typeof e.type === "string" && typeof e.at === "string") {
      return { seq, type: e.type, at: e.at, data: e.data } as LoggedEvent | OtherEvent;
    }
  } catch {
    // kept below as an unreadable event
  }
  return { seq, type: "", at: "", data: text };
}
