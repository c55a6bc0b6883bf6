// A runtime instance: one NATS connection, one root lease held before any
// Session is registered (so a record naming this instance is believed
// only while the lease exists, D7), the live-root registry, and a caller
// for the question service. It opens Sessions as their live root, runs
// child Sessions, and joins the resume pool.

import { createHash } from "node:crypto";
import { Code, HoldoverError, wire } from "./errors.js";
import { InboxReader } from "./inbox.js";
import { Lease, releaseBound } from "./lease.js";
import { Registry } from "./liveroot.js";
import { ResumeEndpoint, ResumeQueue, ResumeSubject, checkSession } from "./names.js";
import { admit } from "./origin.js";
import { decoder, encoder, openConn, type Conn, type ConnectOptions } from "./nats.js";
import { Caller } from "./caller.js";
import { SessionLog } from "./sessionlog.js";
import { Session, newID } from "./session.js";
import type { ResumeReply, ResumeRequest } from "./wire.js";

export type Warn = (msg: string, fields?: Record<string, unknown>) => void;

export interface RuntimeOptions extends ConnectOptions {
  /** Names this process in the live-root registry and its root lease; letters, digits, '-' and '_'. Default: random. */
  instance?: string;
  /**
   * How long the root and caller leases outlive this process's connection:
   * the bound on an answer noticing the process died (D7). At least 1 s; default 2 s.
   */
  releaseBoundMs?: number;
  /** Receives the SDK's warnings; default: console.warn. */
  warn?: Warn;
  /** Receives the SDK's informational lines (joined the pool, resumed a Session); default: none. */
  info?: Warn;
  /** How many Sessions one consumer of the shared inbox reader follows; default 64 (see InboxReader). */
  inboxShardSize?: number;
}

export class Runtime {
  readonly registry: Registry;
  readonly log: SessionLog;
  /** Reads the inboxes of every Session this instance runs, through consumers inbox-<instance>-<n>. */
  readonly inboxes: InboxReader;
  private closed = false;

  private constructor(
    readonly conn: Conn,
    readonly instance: string,
    readonly caller: Caller,
    private rootLease: Lease,
    private readonly bound: number,
    readonly warn: Warn,
    readonly info: Warn,
    shardSize?: number,
  ) {
    this.registry = new Registry(conn);
    this.inboxes = new InboxReader(conn, { name: instance, warn, ...(shardSize ? { shardSize } : {}) });
    this.log = new SessionLog(conn);
    void this.keepLease();
  }

  /** Connects, holds the root lease and the caller lease. Close it when done. */
  static async connect(opts: RuntimeOptions): Promise<Runtime> {
    const warn = opts.warn ?? ((msg, fields) => console.warn(msg, fields ?? ""));
    const info = opts.info ?? (() => {});
    const instance = opts.instance ?? newID("runtime");
    checkSession(instance); // it names the inbox reader's consumers too
    const bound = releaseBound(opts.releaseBoundMs);
    const conn = await openConn(opts);
    try {
      const lease = await Lease.hold(conn, "root", instance, bound);
      const caller = await Caller.create(conn, { releaseBoundMs: bound, warn });
      return new Runtime(conn, instance, caller, lease, bound, warn, info, opts.inboxShardSize);
    } catch (err) {
      await conn.nc.close();
      throw err;
    }
  }

  /** The root lease's name, as `nats consumer ls CLAIMS` shows it. */
  get rootLeaseName(): string {
    return this.rootLease.name;
  }

  /**
   * Makes this instance the live root of sid (a new epoch, which fences any
   * earlier root out), resumes the Session from its log, repairing
   * interrupted tool calls, and starts reading its inbox.
   */
  async open(sid: string): Promise<Session> {
    const epoch = await this.registry.register(sid, this.instance);
    return this.start(new Session(sid, { instance: this.instance, epoch }, this.deps()));
  }

  /**
   * Opens the Session of a child agent run for tool call callId of parent:
   * registered as a child owned by the parent's Session, so its questions
   * fail DELEGATED_CALLER (M9) and it reports them in its final message.
   */
  async openChild(parent: Session, callId: string): Promise<Session> {
    const sid = childSession(parent.id, callId);
    const epoch = await this.registry.registerChild(sid, this.instance, parent.id);
    return this.start(new Session(sid, { instance: this.instance, epoch, owner: parent.id }, this.deps()));
  }

  private async start(s: Session): Promise<Session> {
    try {
      await s.load();
      await s.serve();
    } catch (err) {
      await s.stop();
      await this.release(s);
      throw err;
    }
    this.info("session resumed", { session: s.id, seq: s.last, queued: s.state.queue.length, turnOpen: s.state.turn !== "" });
    return s;
  }

  /**
   * Stops a Session and releases its live root, so the next answer resumes
   * it in the pool (D7). Releasing a registration that is no longer current
   * changes nothing.
   */
  async release(s: Session): Promise<void> {
    await s.stop();
    if (this.conn.nc.isClosed()) return; // the root lease ends within the release bound instead
    await this.registry.release(s.id, s.ref).catch((err: unknown) => this.warn("release the live root", { session: s.id, err }));
  }

  /**
   * Joins the resume pool: each request to resume a Session with no live
   * root (D7) reaches one instance of the pool, which runs resume(sid) and
   * answers with its instance id. A request not sent from the inbox of a
   * role that may send it (origin.ts: the worker's) resumes nothing and
   * gets no reply. Returns the function that leaves.
   */
  async joinPool(resume: (sid: string) => Promise<void>): Promise<() => void> {
    const sub = this.conn.nc.subscribe(ResumeSubject, {
      queue: ResumeQueue,
      callback: (err, m) => {
        if (err || !admit(ResumeEndpoint, m, this.warn)) return;
        void (async () => {
          let reply: ResumeReply;
          try {
            let req: ResumeRequest;
            try {
              req = JSON.parse(decoder.decode(m.data)) as ResumeRequest;
            } catch (e) {
              throw new HoldoverError(Code.BadRequest, `resume request is not JSON: ${(e as Error).message}`);
            }
            checkSession(req.session);
            await resume(req.session);
            reply = { instance: this.instance };
          } catch (e) {
            reply = { error: wire(e) };
          }
          m.respond(encoder.encode(JSON.stringify(reply)));
        })();
      },
    });
    // Live once the server has it: a request sent right after this returns finds this instance.
    await this.conn.nc.flush();
    this.info("joined the resume pool", { subject: ResumeSubject, lease: this.rootLease.name });
    return () => sub.unsubscribe();
  }

  /** Ends the leases and closes the connection. Release the Sessions first. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.caller.close();
    await this.inboxes.close();
    // An agent may not delete consumers of CLAIMS (package auth): NATS ends the root
    // lease the release bound after this. The Sessions were released first,
    // so no answer waits on it meanwhile.
    this.rootLease.drop();
    await this.conn.nc.drain().catch(() => undefined);
  }

  private deps() {
    return { conn: this.conn, log: this.log, registry: this.registry, inboxes: this.inboxes, warn: this.warn };
  }

  /**
   * After a reconnect that outlasted the release bound the root lease is
   * gone and this instance's Sessions look lost; until an answer resumes
   * them elsewhere they are still served here, and holding the lease again
   * makes them alive once more.
   */
  private async keepLease(): Promise<void> {
    for await (const s of this.conn.nc.status()) {
      if (this.closed) return;
      if (s.type !== "reconnect") continue;
      try {
        if (await this.rootLease.alive()) continue;
        this.warn("the root lease ended while cut off from NATS; holding it again", { lease: this.rootLease.name });
        this.rootLease.drop();
        this.rootLease = await Lease.hold(this.conn, "root", this.instance, this.bound);
      } catch (err) {
        this.warn("check the root lease after a reconnect", { err });
      }
    }
  }
}

/**
 * The Session of the child agent that call callId of Session sid runs, as
 * the Go runtime names it (runtime.ChildSession): readable, one per call,
 * a valid Session id.
 */
export function childSession(sid: string, callId: string): string {
  const sum = createHash("sha256").update(sid + "\u0000" + callId).digest("hex").slice(0, 16);
  return `${sid.slice(0, 100)}-sub-${sum}`;
}
