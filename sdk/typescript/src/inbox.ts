// The shared inbox reader (inbox.Reader in Go, docs/agent-protocol.md §9):
// the inboxes of every Session one runtime process runs, read through one
// pull consumer per ShardSize Sessions instead of one consumer per Session,
// which costs the server tens of KiB each and a consumer create per start.

import { AckPolicy, DeliverPolicy, JetStreamApiError, type ConsumerConfig, type ConsumerInfo, type ConsumerMessages, type JsMsg } from "@nats-io/jetstream";
import { nanos, type MsgHdrs } from "@nats-io/nats-core";
import { Code, HoldoverError, wrap } from "./errors.js";
import type { Message as InboxMessage } from "./generated/events.js";
import { SessionsStream, checkSession, inboxSubjects } from "./names.js";
import { decoder, type Conn } from "./nats.js";

/** The header that marks a reply reservation's marker on a reply subject; readers pass over such messages. */
export const MarkerHeader = "Holdover-Reservation";

/**
 * How many Sessions one consumer follows by default (inbox.DefaultShardSize).
 * The server checks a consumer's filters pairwise on every update, so an
 * update costs the square of its filters: keep a shard small.
 */
export const DefaultShardSize = 64;

/** How long a reader's consumer outlives its client (inbox.readerIdle). */
const readerIdleMs = 30_000;
/** How often the server shows a waiting pull (streams.PullHeartbeat); two missed make the client look the consumer up. */
const pullHeartbeatMs = 1_000;
/** How long a failed recovery waits before it tries again. */
const retryMs = 1_000;

/** One message read from a Session inbox. */
export interface Queued {
  /** The SESSIONS stream seq: the runtime records it in agent/inbox/spliced and resumes after it. */
  seq: number;
  message: InboxMessage;
}

export interface InboxReaderOptions {
  /** Names the reader's consumers, inbox-<name>-<n>: the runtime instance. Letters, digits, '-' and '_'. */
  name: string;
  /** How many Sessions one consumer follows; default DefaultShardSize. */
  shardSize?: number;
  /** Receives the reader's warnings. */
  warn: (msg: string, fields?: Record<string, unknown>) => void;
}

/** One message of the stream, from a consumer or a direct get. */
interface Stored {
  seq: number;
  headers?: MsgHdrs;
  data: Uint8Array;
}

/** One followed Session. */
interface Follower {
  readonly sid: string;
  readonly subjects: string[];
  readonly deliver: (q: Queued) => void | Promise<void>;
  readonly shard: Shard;
  /** The stream seq of the last message queued for delivery: anything at or before it is passed over. */
  seen: number;
  /**
   * False while the Session catches up; the consumer's deliveries are held
   * meanwhile. catchUps counts the catch-ups begun: only the last may end
   * it, since only it surely began after the consumer last started
   * following the Session.
   */
  caught: boolean;
  catchUps: number;
  held: Stored[];
  queue: Stored[];
  /** The delivery of the queue under way, if any. */
  draining?: Promise<void>;
  left: boolean;
}

/** One consumer and the Sessions it follows. */
interface Shard {
  readonly name: string;
  readonly followers: Map<string, Follower>;
  /** The update that will carry the changes made since the last one started. */
  next?: Deferred;
  /** Whether updates are being applied. */
  updating: boolean;
  /** The consumption while the consumer is consumed. */
  messages?: ConsumerMessages;
}

interface Deferred {
  promise: Promise<void>;
  resolve(): void;
  reject(err: unknown): void;
}

/**
 * Reads the inboxes of the Sessions one process runs (docs/agent-protocol.md
 * §9). Its consumers are named inbox-<name>-<n> on SESSIONS; each filters on
 * the two inbox subjects of up to shardSize Sessions, a set the reader
 * updates as Sessions are followed and left, and is deleted when its last
 * Session leaves. Messages are routed to their Session in memory and
 * delivered in stream order, one at a time per Session, so one slow Session
 * holds up no other.
 *
 * A Session followed from a position first reads what its consumer will
 * not deliver, the messages stored before its filters joined, with direct
 * gets (catch-up), and holds the consumer's deliveries until then: nothing
 * is delivered twice or out of order. A consumer that vanishes (deleted,
 * or idle past its threshold during a long disconnect) is noticed (its
 * consumption ends, an update finds it gone, heartbeats go missing) and
 * created again, and every Session on it catches up from its last delivery.
 * Where a Session is stays in its log (inboxSeq), never here.
 */
export class InboxReader {
  private readonly shardSize: number;
  private readonly sessions = new Map<string, Follower>();
  private readonly shards: Shard[] = [];
  private closed = false;

  constructor(
    private readonly conn: Conn,
    private readonly opts: InboxReaderOptions,
  ) {
    try {
      checkSession(opts.name);
    } catch (err) {
      throw wrap(err, Code.BadRequest, `inbox reader name ${JSON.stringify(opts.name)}`);
    }
    this.shardSize = opts.shardSize && opts.shardSize > 0 ? opts.shardSize : DefaultShardSize;
  }

  /**
   * Delivers Session sid's inbox messages after stream seq `after` (0: from
   * the first) to deliver, one at a time and in order (a promise it returns
   * is awaited), passing over reservation markers and messages that do not
   * decode. Resolves once the Session's consumer follows it and its
   * catch-up is read, with the function that stops the delivery and waits
   * for one in progress (never await it from deliver). A Session is
   * followed once at a time (CONFLICT otherwise).
   */
  async follow(sid: string, after: number, deliver: (q: Queued) => void | Promise<void>): Promise<() => Promise<void>> {
    const subjects = inboxSubjects(sid);
    if (this.closed) throw new HoldoverError(Code.Internal, `inbox reader ${this.opts.name} is closed`);
    if (this.sessions.has(sid)) throw new HoldoverError(Code.Conflict, `the inbox of session ${sid} is followed already`);
    const shard = this.shardWithRoom();
    const f: Follower = { sid, subjects, deliver, shard, seen: after, caught: false, catchUps: 0, held: [], queue: [], left: false };
    this.sessions.set(sid, f);
    shard.followers.set(sid, f);
    const stop = () => this.leave(f);
    try {
      await this.update(shard);
    } catch (err) {
      await stop();
      throw wrap(err, Code.Internal, `follow the inbox of session ${sid}`);
    }
    try {
      await this.catchUp(f);
    } catch (err) {
      await stop();
      throw err;
    }
    return stop;
  }

  /** Stops every consumer and deletes them. Stop the followers first. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all(this.shards.map((s) => this.stopShard(s)));
  }

  /** The first shard that follows fewer than shardSize Sessions, adding one when all are full. */
  private shardWithRoom(): Shard {
    const free = this.shards.find((s) => s.followers.size < this.shardSize);
    if (free) return free;
    const s: Shard = { name: `inbox-${this.opts.name}-${this.shards.length}`, followers: new Map(), updating: false };
    this.shards.push(s);
    return s;
  }

  /**
   * Queues the messages of f's subjects from f.seen on that the consumer
   * will not deliver: every one stored until the stream's end as it reads
   * it, which is past where the consumer started following f. Then it
   * queues the deliveries it held past what it read.
   */
  private async catchUp(f: Follower): Promise<void> {
    const mine = ++f.catchUps;
    f.caught = false;
    await this.read(f.sid, f.subjects, f.seen + 1, (m) => this.queue(f, m));
    if (f.catchUps !== mine) return; // a later catch-up ends it
    f.caught = true;
    for (const m of f.held) this.queue(f, m);
    f.held = [];
  }

  /**
   * Session sid's inbox messages stored after stream seq `after`, read once
   * by direct gets, markers and messages that do not decode passed over:
   * what this reader delivers next. A discard reads a message it has not
   * delivered yet this way.
   */
  async since(sid: string, after: number): Promise<Queued[]> {
    const out: Queued[] = [];
    await this.read(sid, inboxSubjects(sid), after + 1, (m) => {
      const q = this.decoded(sid, m);
      if (q) out.push(q);
    });
    return out;
  }

  /** Hands visit every message of subjects from stream seq `from` on, in stream order, by direct gets. */
  private async read(sid: string, subjects: string[], from: number, visit: (m: Stored) => void): Promise<void> {
    // The next message of each subject at or after `from`, or null once it has none.
    const next: Array<Stored | null | undefined> = subjects.map(() => undefined);
    for (;;) {
      let first: Stored | undefined;
      for (const [i, subject] of subjects.entries()) {
        let m = next[i];
        if (m === undefined || m === null || m.seq < from) {
          const got = await this.conn.jsm.direct.getMessage(SessionsStream, { seq: from, next_by_subj: subject }).catch((err: unknown) => {
            throw wrap(err, Code.Internal, `read the inbox of session ${sid} from stream seq ${from}`);
          });
          m = got ? { seq: got.seq, headers: got.header, data: got.data } : null;
          next[i] = m;
        }
        if (m && m.seq >= from && (!first || m.seq < first.seq)) first = m;
      }
      if (!first) return;
      visit(first);
      from = first.seq + 1;
    }
  }

  /** Hands a message the consumer of s delivered to its Session. */
  private route(s: Shard, m: JsMsg): void {
    const sid = m.subject.split(".")[2] ?? "";
    const f = this.sessions.get(sid);
    // Left while the consumer's filters still named it: the message stays
    // in the stream for whoever runs the Session next.
    if (!f || f.shard !== s) return;
    const msg: Stored = { seq: m.seq, data: m.data, ...(m.headers ? { headers: m.headers } : {}) };
    if (!f.caught) f.held.push(msg);
    else this.queue(f, msg);
  }

  /** Puts m on f's delivery queue unless it was queued already, and starts delivering it. */
  private queue(f: Follower, m: Stored): void {
    if (f.left || m.seq <= f.seen) return;
    f.seen = m.seq;
    f.queue.push(m);
    f.draining ??= this.drain(f);
  }

  /** Delivers f's queue until it is empty or f left. */
  private async drain(f: Follower): Promise<void> {
    await null; // deliver outside the caller's stack (a consumer's callback), after f.draining is set
    for (let m = f.queue.shift(); m && !f.left; m = f.queue.shift()) {
      const q = this.decoded(f.sid, m);
      if (!q) continue;
      try {
        await f.deliver(q);
      } catch (err) {
        this.opts.warn("an inbox delivery failed", { session: f.sid, seq: m.seq, err });
      }
    }
    f.draining = undefined;
  }

  /** m as a Session reads it; undefined for a reply reservation's marker (the question worker's) or a message that does not decode. */
  private decoded(sid: string, m: Stored): Queued | undefined {
    if (m.headers?.get(MarkerHeader)) return undefined;
    try {
      return { seq: m.seq, message: decodeInboxMessage(m.data) };
    } catch (err) {
      this.opts.warn("passing over an inbox message that does not decode", { session: sid, seq: m.seq, err });
      return undefined;
    }
  }

  /** Stops following f and waits for a delivery in progress. */
  private async leave(f: Follower): Promise<void> {
    if (!f.left) {
      f.left = true;
      f.queue = [];
      f.held = [];
      if (this.sessions.get(f.sid) === f) this.sessions.delete(f.sid);
      f.shard.followers.delete(f.sid);
      // Nobody waits: the routing passes over f meanwhile.
      this.update(f.shard).catch((err: unknown) => {
        if (!this.closed) this.opts.warn("update an inbox consumer after a Session left", { consumer: f.shard.name, err });
      });
    }
    await f.draining;
  }

  /** The update that will carry the changes made to s so far; starts applying updates. */
  private update(s: Shard): Promise<void> {
    if (!s.next) {
      let resolve!: () => void, reject!: (err: unknown) => void;
      const promise = new Promise<void>((ok, fail) => ((resolve = ok), (reject = fail)));
      s.next = { promise, resolve, reject };
    }
    const u = s.next;
    if (!s.updating) {
      s.updating = true;
      void this.applyUpdates(s);
    }
    return u.promise;
  }

  /** Applies updates until none is pending: each sets the consumer's filters to the Sessions followed when it starts. */
  private async applyUpdates(s: Shard): Promise<void> {
    for (let u = s.next; u; u = s.next) {
      s.next = undefined;
      if (this.closed) {
        u.reject(new HoldoverError(Code.Internal, `inbox reader ${this.opts.name} is closed`));
        continue;
      }
      const filters = [...s.followers.values()].flatMap((f) => f.subjects).sort();
      try {
        await this.apply(s, filters);
        u.resolve();
      } catch (err) {
        u.reject(err);
      }
    }
    s.updating = false;
  }

  /**
   * Makes the consumer of s filter on filters: created and consumed when
   * not consumed yet, updated, or deleted when filters is empty (a consumer
   * without filters would deliver the whole stream). A consumer that
   * vanished while consumed is not created again here, which would lose
   * what was stored meanwhile: it is recovered (lost).
   */
  private async apply(s: Shard, filters: string[]): Promise<void> {
    if (filters.length === 0) return this.stopShard(s);
    const cfg: Partial<ConsumerConfig> = {
      name: s.name,
      filter_subjects: filters,
      deliver_policy: DeliverPolicy.New,
      ack_policy: AckPolicy.None,
      inactive_threshold: nanos(readerIdleMs),
      // Where a Session is is in its log (inboxSeq), not here.
      num_replicas: 1,
      mem_storage: true,
    };
    const sessions = filters.length / 2;
    const consumed = s.messages;
    if (consumed) {
      try {
        await this.conn.jsm.consumers.update(SessionsStream, s.name, cfg);
      } catch (err) {
        if (!isGone(err)) throw wrap(err, Code.Internal, `update inbox consumer ${s.name} to ${sessions} Sessions`);
        this.lost(s, consumed);
      }
      return;
    }
    const info = await this.createOrUpdate(cfg).catch((err: unknown) => {
      throw wrap(err, Code.Internal, `create inbox consumer ${s.name} for ${sessions} Sessions`);
    });
    const messages = await this.conn.js.consumers.getConsumerFromInfo(info).consume({
      callback: (m) => this.route(s, m),
      idle_heartbeat: pullHeartbeatMs,
      // A consumer deleted under a waiting pull, or found gone once
      // heartbeats are missed, ends the consumption: it is recovered.
      abort_on_missing_resource: true,
    });
    s.messages = messages;
    if (this.closed) {
      // Closed while it was being created, after close stopped the shards.
      await this.stopShard(s);
      throw new HoldoverError(Code.Internal, `inbox reader ${this.opts.name} is closed`);
    }
    void messages.closed().then(() => this.lost(s, messages));
  }

  /**
   * Creates the consumer, or updates the one an earlier process of the same
   * instance left (the client's create sends the "create" action).
   */
  private async createOrUpdate(cfg: Partial<ConsumerConfig>): Promise<ConsumerInfo> {
    try {
      return await this.conn.jsm.consumers.add(SessionsStream, cfg);
    } catch (err) {
      if (!(err instanceof JetStreamApiError && err.code === consumerExists)) throw err;
      return this.conn.jsm.consumers.update(SessionsStream, cfg.name!, cfg);
    }
  }

  /** Ends the consumption of s and deletes its consumer. */
  private async stopShard(s: Shard): Promise<void> {
    const messages = s.messages;
    s.messages = undefined;
    if (!messages) return;
    messages.stop();
    await this.conn.jsm.consumers.delete(SessionsStream, s.name).catch((err: unknown) => {
      if (!isGone(err)) this.opts.warn("delete an inbox consumer; it ends when idle", { consumer: s.name, idleMs: readerIdleMs, err });
    });
  }

  /**
   * Recovers s when the consumption `messages` ended without stopShard, or
   * its consumer is gone: it vanished, and what was stored since is read
   * again.
   */
  private lost(s: Shard, messages: ConsumerMessages): void {
    if (s.messages !== messages || this.closed) return;
    s.messages = undefined;
    messages.stop();
    this.opts.warn("an inbox consumer vanished; creating it again", { consumer: s.name });
    void this.recover(s);
  }

  /** Creates the consumer of s again and catches every Session on it up from its last delivery, until that succeeds or the reader closes. */
  private async recover(s: Shard): Promise<void> {
    while (!this.closed) {
      const followers = [...s.followers.values()];
      for (const f of followers) {
        // Hold deliveries until caught up, and let no catch-up begun
        // before the consumer came back end it.
        f.caught = false;
        f.catchUps++;
      }
      try {
        await this.update(s);
        for (const f of followers) if (!f.left) await this.catchUp(f);
        return;
      } catch (err) {
        if (this.closed) return;
        this.opts.warn("recover an inbox consumer; trying again", { consumer: s.name, err });
        await new Promise((r) => setTimeout(r, retryMs));
      }
    }
  }
}

/** JetStream's "consumer already exists" with another configuration. */
const consumerExists = 10148;

/** JetStream's "consumer not found" (10014) and "consumer does not exist" (10149, an update of a missing one). */
function isGone(err: unknown): boolean {
  return err instanceof JetStreamApiError && (err.code === 10014 || err.code === 10149);
}

/** Parses and checks one inbox message (inbox.Decode): id, role and a known source. */
export function decodeInboxMessage(data: Uint8Array): InboxMessage {
  const m = JSON.parse(decoder.decode(data)) as InboxMessage;
  if (!m || typeof m.id !== "string" || m.id === "") throw new HoldoverError(Code.BadRequest, "message: id is required");
  if (typeof m.role !== "string" || m.role === "") throw new HoldoverError(Code.BadRequest, "message: role is required");
  const kind = m.source?.kind;
  if (kind === "user") return m;
  if (kind === "user-question-reply" && m.source.callId && m.source.outcome === "answered") return m;
  throw new HoldoverError(Code.BadRequest, `unknown or malformed message source ${JSON.stringify(m.source)}`);
}
