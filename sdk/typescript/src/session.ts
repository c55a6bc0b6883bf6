// A Session as its live root sees it: the only writer of its log while it
// runs (fenced appends), everything it knows folded from that log
// (SessionState), its inbox read and spliced as messages arrive, and the
// claim and admission of queued messages at step boundaries (D8).

import { randomFillSync } from "node:crypto";
import type { Subscription } from "@nats-io/nats-core";
import { Code, HoldoverError, codeOf, wire } from "./errors.js";
import type { EventBodies, Message as InboxMessage, Part, ToolSchema } from "./generated/events.js";
import type { InboxReader } from "./inbox.js";
import { DiscardEndpoint, discardSubject } from "./names.js";
import { admit } from "./origin.js";
import { decoder, encoder, type Conn } from "./nats.js";
import type { Registry } from "./liveroot.js";
import { SessionLog, type EventType } from "./sessionlog.js";
import { SessionState } from "./state.js";
import type { AgentRef, DiscardReply, DiscardRequest } from "./wire.js";

/** The result text of a tool call a resumed agent found recorded without a result (D3). */
export const InterruptedText = "The tool call was interrupted after it was recorded.";

export interface SessionDeps {
  conn: Conn;
  log: SessionLog;
  registry: Registry;
  /** The runtime's shared inbox reader. */
  inboxes: InboxReader;
  warn: (msg: string, fields?: Record<string, unknown>) => void;
}

export class Session {
  /** What the log says, folded: the conversation, the queue, the open Turn. */
  state = new SessionState();
  /** The Session seq of the log's last event. */
  last = 0;
  private lock: Promise<unknown> = Promise.resolve();
  private stopInbox?: () => Promise<void>;
  private discards?: Subscription;
  private waiters: Array<() => void> = [];
  private closed = false;
  private failure?: unknown;

  constructor(
    readonly id: string,
    readonly ref: AgentRef,
    private readonly deps: SessionDeps,
  ) {}

  /** Whether this Session runs as a child owned by another agent. */
  get child(): boolean {
    return Boolean(this.ref.owner);
  }

  /**
   * Rebuilds the state from the log and repairs it: each tool call
   * recorded without a result gets the TOOL_OUTCOME_UNKNOWN result, so a
   * timed question interrupted by a crash turns continued and stays
   * answerable (D3). A writer that appends meanwhile makes it start over.
   */
  async load(): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await this.locked(async () => {
          const log = await this.deps.log.read(this.id, 0);
          this.last = log.reduce((m, e) => Math.max(m, e.seq), 0);
          this.state = SessionState.fold(log);
          for (const c of [...this.state.open]) {
            await this.append("tool/result", withTurn(c.turn, {
              callId: c.callId,
              name: c.name,
              content: text(InterruptedText),
              isError: true,
              error: { code: Code.ToolOutcomeUnknown },
            }));
          }
        });
        return;
      } catch (err) {
        if (codeOf(err) !== Code.Conflict || attempt >= 4) throw err;
      }
    }
  }

  /**
   * Starts over from the log after another writer appended (an append lost
   * with CONFLICT): the inbox is read again from the last splice the log
   * holds, since a message whose splice lost is in no log, then the state
   * is rebuilt and repaired as at open.
   */
  async rebuild(): Promise<void> {
    await this.stopReading();
    this.failure = undefined;
    await this.load();
    await this.serve();
  }

  /** Records an event after the log's last one and folds it. */
  record<T extends EventType>(type: T, data: EventBodies[T]): Promise<number> {
    return this.locked(() => this.append(type, data));
  }

  /** Opens a Turn unless one is open, and returns its id. */
  beginTurn(): Promise<string> {
    return this.locked(async () => {
      if (this.state.turn === "") await this.append("turn/start", { turn: newID("turn") });
      return this.state.turn;
    });
  }

  /**
   * The step boundary: claims each queued message and admits it as a
   * user/message with the same id and source, in splice order (D8), then
   * records the model request's header, in one go so nothing is spliced in
   * between. A message restored from the log is claimed again, which
   * re-creates its reply reservation. Returns the admitted messages.
   */
  beginStep(model: string, tools: ToolSchema[]): Promise<InboxMessage[]> {
    return this.locked(async () => {
      const admitted: InboxMessage[] = [];
      for (let it = this.state.queue[0]; it; it = this.state.queue[0]) {
        await this.append("agent/inbox/claimed", withTurn(this.state.turn, { messageId: it.message.id }));
        await this.append("user/message", withTurn(this.state.turn, { message: it.message }));
        admitted.push(it.message);
      }
      await this.append("request/header", withTurn(this.state.turn, { model, tools }));
      return admitted;
    });
  }

  /** Records a step's end, where the next step's admissions happen. */
  async endStep(): Promise<void> {
    await this.record("step/end", { turn: this.state.turn, step: this.state.step + 1 });
  }

  /**
   * Closes the open Turn, first discarding what it did not admit: a
   * discard releases the reply's reservation, so the user can answer again (D8).
   */
  endTurn(reason: string): Promise<void> {
    return this.locked(async () => {
      for (let it = this.state.queue[0]; it; it = this.state.queue[0]) {
        await this.append("agent/inbox/discarded", withTurn(this.state.turn, { messageId: it.message.id, reason: "the Turn ended before admitting it" }));
      }
      await this.append("turn/end", { turn: this.state.turn, reason });
    });
  }

  /**
   * Drops a queued message before it is admitted (§7): for a late answer
   * this releases its reservation and the question stays answerable. A
   * message in the inbox that the reader has not delivered yet is spliced
   * first, with every message before it, as the reader would have: a reply
   * the service accepted holds its call from then on. CONFLICT once it was
   * admitted or dropped; NOT_FOUND if the inbox does not hold it.
   */
  discard(messageId: string, reason = "discarded on request"): Promise<void> {
    return this.locked(async () => {
      let it = this.state.inbox.get(messageId);
      if (!it) {
        const unread = await this.deps.inboxes.since(this.id, this.state.inboxSeq);
        const last = unread.findIndex((q) => q.message.id === messageId);
        for (const q of unread.slice(0, last + 1)) await this.spliceLocked(q.message, q.seq);
        this.wakeAll();
        it = this.state.inbox.get(messageId);
      }
      if (!it) throw new HoldoverError(Code.NotFound, `session ${this.id} has no inbox message ${JSON.stringify(messageId)}`);
      if (!this.state.queue.includes(it)) throw new HoldoverError(Code.Conflict, `inbox message ${JSON.stringify(messageId)} of session ${this.id} is no longer queued`);
      await this.append("agent/inbox/discarded", withTurn(this.state.turn, { messageId, reason }));
    });
  }

  /** Throws CALLER_NOT_LIVE (or DELEGATED_CALLER) unless this instance is still the Session's live root (M9). */
  async checkLive(): Promise<void> {
    if (!this.child) await this.deps.registry.check(this.id, this.ref);
  }

  /** Resolves once a message is queued (or the Session closes or its reader failed). */
  async waitForInput(signal?: AbortSignal): Promise<void> {
    if (this.state.queue.length > 0 || this.closed) return;
    if (this.failure) throw this.failure;
    await new Promise<void>((resolve) => {
      const done = () => {
        signal?.removeEventListener("abort", done);
        resolve();
      };
      this.waiters.push(done);
      signal?.addEventListener("abort", done, { once: true });
    });
    if (this.failure) throw this.failure;
  }

  /**
   * Starts reading the inbox through the runtime's shared reader, after the
   * last spliced sequence: the Session's inbox subject and every call's
   * reply subject, markers passed over. Each message is spliced as it
   * arrives, even while a tool runs, so the projection shows the queued
   * reply (P5). Also answers discard requests for the Session: those a
   * role that may send them sent from its inbox (origin.ts); any other,
   * such as a stored message replayed onto the subject or a request whose
   * reply names a stream, discards nothing and gets no reply.
   */
  async serve(): Promise<void> {
    this.stopInbox = await this.deps.inboxes.follow(this.id, this.state.inboxSeq, (q) =>
      this.splice(q.message, q.seq).catch((err: unknown) => this.fail(err)),
    );
    this.discards = this.deps.conn.nc.subscribe(discardSubject(this.id), {
      callback: (err, m) => {
        if (err || !admit(DiscardEndpoint, m, this.deps.warn)) return;
        void this.serveDiscard(m.data).then((reply) => m.respond(encoder.encode(JSON.stringify(reply))));
      },
    });
    await this.deps.conn.nc.flush();
  }

  /** Answers one discard request: `{}`, or the error that refused it. */
  private async serveDiscard(data: Uint8Array): Promise<DiscardReply> {
    const malformed = new HoldoverError(Code.BadRequest, `a discard request is {"session"?: "…", "messageId": "…", "reason"?: "…"}`);
    let req: DiscardRequest;
    try {
      req = JSON.parse(decoder.decode(data)) as DiscardRequest;
    } catch {
      return { error: wire(malformed) };
    }
    if (typeof req?.messageId !== "string" || req.messageId === "") return { error: wire(malformed) };
    if (req.session !== undefined && req.session !== this.id) {
      return { error: wire(new HoldoverError(Code.BadRequest, `a discard request on ${discardSubject(this.id)} names session ${JSON.stringify(req.session)}`)) };
    }
    try {
      await this.discard(req.messageId, req.reason || undefined);
      return {};
    } catch (e) {
      return { error: wire(e) };
    }
  }

  /** Stops reading the inbox and serving discards. Releases nothing: see Runtime.release. */
  async stop(): Promise<void> {
    this.closed = true;
    this.wakeAll();
    await this.stopReading();
  }

  private async stopReading(): Promise<void> {
    this.discards?.unsubscribe();
    const stop = this.stopInbox;
    this.stopInbox = undefined;
    await stop?.();
  }

  private async splice(message: InboxMessage, seq: number): Promise<void> {
    await this.locked(() => this.spliceLocked(message, seq));
    this.wakeAll();
  }

  /** Records message as spliced unless it was; the caller holds the lock. */
  private async spliceLocked(message: InboxMessage, seq: number): Promise<void> {
    if (this.state.inbox.has(message.id) || seq <= this.state.inboxSeq) return;
    await this.append("agent/inbox/spliced", withTurn(this.state.turn, { message, inboxSeq: seq }));
  }

  private fail(err: unknown): void {
    this.failure ??= err;
    this.wakeAll();
  }

  /** Why the Session can no longer be served, if its inbox reader found out first. */
  get failed(): unknown {
    return this.failure;
  }

  private wakeAll(): void {
    const ws = this.waiters;
    this.waiters = [];
    for (const w of ws) w();
  }

  /** Appends and folds; the caller holds the lock. */
  private async append<T extends EventType>(type: T, data: EventBodies[T]): Promise<number> {
    if (this.closed) throw new HoldoverError(Code.Internal, `session ${this.id} is stopped; it records nothing more`);
    const at = new Date();
    const seq = await this.deps.log.append(this.id, this.last, type, data, at);
    this.last = seq;
    this.state.apply({ seq, type, at: at.toISOString(), data } as never);
    return seq;
  }

  /** Runs fn after every earlier locked call: one writer order for the loop, the inbox reader and discards. */
  private locked<R>(fn: () => Promise<R>): Promise<R> {
    const run = this.lock.then(fn, fn);
    this.lock = run.catch(() => undefined);
    return run;
  }
}

/** Message content of one text part. */
export function text(s: string): Part[] {
  return [{ type: "text", text: s }];
}

/** A body with its Turn first, as Go writes it, and no Turn when idle (omitempty). */
export function withTurn<T extends object>(turn: string | undefined, body: T): T & { turn?: string } {
  return turn ? { turn, ...body } : body;
}

/** Random bytes for newID, drawn 4 KiB at a time: a draw per id was a call into the system's generator each. */
const idBytes = Buffer.alloc(4096);
let idBytesUsed = idBytes.length;

/** A random id with a readable prefix: 10 random bytes in hex. */
export function newID(prefix: string): string {
  if (idBytesUsed + 10 > idBytes.length) {
    randomFillSync(idBytes);
    idBytesUsed = 0;
  }
  idBytesUsed += 10;
  return `${prefix}-${idBytes.toString("hex", idBytesUsed - 10, idBytesUsed)}`;
}
