// The calling side of the userQuestions service, as Go's caller.Client
// speaks it: ask and askTimed under one caller lease, the accepted frame
// that names the worker owning the wait, the worker's lease watched so a
// dead worker leaves no call hanging, abort on cancellation, status after a
// reconnect, and the deadline backstop for a frozen worker
// (docs/design.md, "Every caller holds a lease").

import { headers, nuid, RequestError, TimeoutError, NoRespondersError, type Msg } from "@nats-io/nats-core";
import { Code, HoldoverError, wrap } from "./errors.js";
import { Lease, releaseBound, watchLease, type LeaseWatch } from "./lease.js";
import { serviceSubject, workerSubject } from "./names.js";
import { decoder, encoder, type Conn } from "./nats.js";
import type { ReplySubject } from "./replies.js";
import type { Accepted, Answer, AskRequest, AskTimedRequest, Batch, Outcome } from "./wire.js";

/** The headers and frames of the foreground calls (package userquestions). */
export const HeaderCallerLease = "Holdover-Caller-Lease";
export const HeaderFrame = "Holdover-Frame";
export const FrameAccepted = "accepted";
export const HeaderOwnerStopped = "Holdover-Owner-Stopped";
export const StoppedEndedWait = "ended";
export const ErrorCodeHeader = "Nats-Service-Error-Code";
export const ErrorHeader = "Nats-Service-Error";
/** The role of a caller's lease, as `nats consumer ls CLAIMS` shows it. */
export const RoleCaller = "caller";

/** A short call (view) with no deadline of its own gets this one. */
export const DefaultCallTimeoutMs = 10_000;

export interface CallerOptions {
  /** How long a dead agent's waits outlive it (the caller lease's InactiveThreshold); at least 1 s, default 2 s. */
  releaseBoundMs?: number;
  /** The bound on view and a status check after a reconnect; default 10 s. */
  callTimeoutMs?: number;
  /** Receives warnings. */
  warn?: (msg: string, fields?: Record<string, unknown>) => void;
}

/** A call's end that never leaves this file: a timed call turns pending, a blocking one is asked again. */
const workerLost = Symbol("worker lost");
/** A stopping worker refused the call before any wait existed: it is asked again. */
const refused = Symbol("refused");

interface PendingCall {
  /** Where its accepted frame and its reply come. */
  reply?: ReplySubject;
  frames: Msg[];
  wake: () => void;
  worker: string;
  requestId: string;
  abandoned: boolean;
  ended?: HoldoverError | typeof workerLost;
}

export class Caller {
  /** The calls whose replies are awaited. */
  private readonly calls = new Set<PendingCall>();
  /** The watch of each worker's lease, shared by every call it owns from the moment the first asks for it. */
  private readonly workers = new Map<string, Promise<LeaseWatch>>();
  private readonly bound: number;
  private readonly callTimeout: number;
  private readonly warn: NonNullable<CallerOptions["warn"]>;
  private lease!: Lease;
  private closed = false;

  private constructor(
    private readonly conn: Conn,
    opts: CallerOptions,
  ) {
    this.bound = releaseBound(opts.releaseBoundMs);
    this.callTimeout = opts.callTimeoutMs ?? DefaultCallTimeoutMs;
    this.warn = opts.warn ?? (() => {});
  }

  /** A Caller holding its lease; its replies come through the connection's (Conn.replies). */
  static async create(conn: Conn, opts: CallerOptions = {}): Promise<Caller> {
    const c = new Caller(conn, opts);
    c.lease = await Lease.hold(conn, RoleCaller, nuid.next(), c.bound);
    void c.followReconnects();
    return c;
  }

  /** The caller lease every ask and askTimed names. */
  get leaseName(): string {
    return this.lease.name;
  }

  /**
   * Waits at most req.timeoutMs for an answer batch (W1, W5): answers, or
   * pending when the wait ended unanswered (the deadline, a Client
   * countdown, or its worker's death). An aborted signal is ASK_ABORTED;
   * every other failure keeps the code the service sent.
   */
  async askTimed(req: AskTimedRequest, signal?: AbortSignal): Promise<Outcome> {
    const deadline = req.timeoutMs > 0 ? Date.now() + req.timeoutMs : undefined;
    for (let n = 0; ; n++) {
      const r = await this.waitCall("askTimed", req, deadline, signal);
      if (r === refused) {
        await sleep(retryDelay(n), signal);
        continue;
      }
      if (r === workerLost) return { pending: true };
      return JSON.parse(decoder.decode(r.data)) as Outcome;
    }
  }

  /**
   * Waits until the questions are answered (M1, M3). A keyed request (with
   * a callId) never times out; a legacy one fails NO_PROVIDER when no Client
   * is there (W6). A worker that dies has the question asked again.
   */
  async ask(req: AskRequest, signal?: AbortSignal): Promise<Answer[]> {
    let retried = false;
    for (let delays = 0; ; ) {
      let r: Msg | typeof workerLost | typeof refused;
      try {
        r = await this.waitCall("ask", req, undefined, signal);
      } catch (err) {
        // A lost worker that was only cut off still holds the wait until it finds its lease gone.
        if (!(retried && err instanceof HoldoverError && err.code === Code.DuplicateWait)) throw err;
        r = refused;
      }
      if (r === workerLost) {
        retried = true;
        continue;
      }
      if (r === refused) {
        await sleep(retryDelay(delays++), signal);
        continue;
      }
      return (JSON.parse(decoder.decode(r.data)) as Batch).answers ?? [];
    }
  }

  /** The Session's userQuestions projection, caught up to its last event. */
  view(session: string): Promise<unknown> {
    return this.call("view", { session });
  }

  /**
   * Ends every call with ASK_ABORTED and abandons it as a cancelled call is
   * abandoned: its worker is told to abort the wait, and a call whose
   * accepted frame is still on its way gets its abort when the frame comes
   * (the replies stay subscribed for a release bound). An agent may not
   * delete its lease (package auth): NATS ends it the release bound later,
   * as in Go (caller.Client.Close).
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const w of this.workers.values()) void w.then((watch) => watch.stop(), () => {});
    const aborts: Promise<void>[] = [];
    for (const pc of [...this.calls]) {
      const owner = this.abandon(pc, false);
      if (owner) aborts.push(this.sendAbort(owner.worker, owner.id));
      this.end(pc, aborted("the client was closed before the question was answered"));
    }
    await Promise.all(aborts);
    this.lease.drop();
  }

  private async call<T>(op: string, body: unknown): Promise<T> {
    let m: Msg;
    try {
      m = await this.conn.replies.request(serviceSubject(op), encoder.encode(JSON.stringify(body)), { timeout: this.callTimeout });
    } catch (err) {
      throw transportError(op, err);
    }
    const err = replyError(m);
    if (err) throw err;
    return JSON.parse(decoder.decode(m.data)) as T;
  }

  /**
   * Sends one ask or askTimed and waits for its reply, following the
   * worker's lease once the accepted frame names it and, for a call due at
   * deadline, asking the worker after it (the backstop).
   */
  private async waitCall(op: string, body: unknown, deadline: number | undefined, signal?: AbortSignal): Promise<Msg | typeof workerLost | typeof refused> {
    if (signal?.aborted) throw aborted();
    if (this.closed) throw new HoldoverError(Code.BadRequest, "the client is closed");
    const pc: PendingCall = { frames: [], wake: () => {}, worker: "", requestId: "", abandoned: false };
    const reply = this.conn.replies.open((m) => this.onReply(pc, m));
    pc.reply = reply;
    this.calls.add(pc);
    const h = headers();
    h.set(HeaderCallerLease, this.lease.name);
    try {
      this.conn.nc.publish(serviceSubject(op), encoder.encode(JSON.stringify(body)), { reply: reply.subject, headers: h });
    } catch (err) {
      this.forget(pc);
      throw wrap(err, Code.Internal, `call ${serviceSubject(op)}`);
    }

    let lost = false;
    let done = false;
    let unwatch = () => {};
    let overdue = false;
    let abortedNow = false;
    const onAbort = () => {
      abortedNow = true;
      pc.wake();
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    const backstop = deadline === undefined ? undefined : this.backstop(pc, deadline, () => {
      overdue = true;
      pc.wake();
    });
    try {
      for (;;) {
        const m = pc.frames.shift();
        if (m) {
          const acc = acceptedFrame(m);
          if (acc) {
            pc.worker = acc.owner;
            pc.requestId = acc.requestId;
            this.watchWorker(acc.owner).then(
              (w) => {
                const off = w.onLost(() => {
                  lost = true;
                  pc.wake();
                });
                if (done) off();
                else unwatch = off;
              },
              (err: unknown) => this.warn("watch worker lease", { lease: acc.owner, err }), // the backstop and reconnects still decide
            );
            continue;
          }
          this.forget(pc);
          return readReply(op, m);
        }
        if (pc.ended !== undefined) {
          if (!pc.abandoned) this.forget(pc); // else it stays for its accepted frame (abandon)
          if (pc.ended === workerLost) return workerLost;
          throw pc.ended;
        }
        if (lost || overdue) {
          this.forget(pc);
          if (overdue && pc.worker !== "") void this.sendAbort(pc.worker, pc.requestId); // for its thaw
          return workerLost;
        }
        if (abortedNow) {
          this.abandon(pc, true);
          throw aborted();
        }
        await new Promise<void>((resolve) => (pc.wake = resolve));
      }
    } finally {
      done = true;
      unwatch();
      signal?.removeEventListener("abort", onAbort);
      backstop?.stop();
    }
  }

  /** Takes a message on pc's reply subject, which is open until the call is forgotten. */
  private onReply(pc: PendingCall, m: Msg): void {
    if (pc.abandoned) {
      this.forget(pc);
      const acc = acceptedFrame(m);
      if (acc) void this.sendAbort(acc.owner, acc.requestId);
      return;
    }
    if (pc.frames.length < 2) pc.frames.push(m); // an accepted frame and one reply fit; more is a duplicate
    pc.wake();
  }

  /** Stops awaiting pc's replies: one that comes later has nobody to go to. */
  private forget(pc: PendingCall): void {
    this.calls.delete(pc);
    pc.reply?.close();
  }

  private end(pc: PendingCall, why: HoldoverError | typeof workerLost): void {
    if (pc.ended === undefined) pc.ended = why;
    pc.wake();
  }

  /**
   * Ends a call whose caller stopped waiting: its worker is told to abort
   * the wait (ASK_ABORTED), now when async, else by the caller with the
   * worker and request returned. A call whose accepted frame has not come
   * stays a release bound for it: onReply sends the abort then.
   */
  private abandon(pc: PendingCall, async: boolean): { worker: string; id: string } | undefined {
    const queued = pc.frames.map(acceptedFrame).find((a) => a !== undefined);
    const worker = pc.worker || queued?.owner || "";
    const id = pc.requestId || queued?.requestId || "";
    if (worker === "") {
      pc.abandoned = true;
      setTimeout(() => this.forget(pc), this.bound).unref();
      return undefined;
    }
    this.forget(pc);
    if (!async) return { worker, id };
    void this.sendAbort(worker, id);
    return undefined;
  }

  private async sendAbort(worker: string, id: string): Promise<void> {
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        await this.conn.replies.request(workerSubject(worker, "abort"), encoder.encode(id), { timeout: 1000 });
        return;
      } catch (err) {
        if (isNoResponders(err) || this.conn.nc.isClosed()) return;
      }
    }
    this.warn("abort not acknowledged; the wait ends with its deadline or its worker", { worker, request: id });
  }

  /**
   * The kept watch of a worker's lease: a caller's calls go to a few
   * workers again and again. The calls whose accepted frames come while
   * the first lookup is under way share it too: one subscription and one
   * lookup per worker, as Go's lease.Watcher keeps.
   */
  private watchWorker(name: string): Promise<LeaseWatch> {
    const have = this.workers.get(name);
    if (have) return have;
    const w = watchLease(this.conn, name, (err) => this.warn("check worker lease", { lease: name, err }));
    this.workers.set(name, w);
    const forget = () => {
      if (this.workers.get(name) === w) this.workers.delete(name);
    };
    w.then((watch) => watch.lost.then(forget), forget);
    return w;
  }

  /**
   * Half a release bound past its deadline, a timed call still waiting asks
   * its worker for status, giving it another half bound to answer: "live"
   * is asked again every half bound (a claim may pause the deadline, W2);
   * no answer, nobody subscribed, or "gone" twice, and the call ends as a
   * worker loss (caller/backstop.go).
   */
  private backstop(pc: PendingCall, deadline: number, overdue: () => void): { stop(): void } {
    const every = this.bound / 2;
    let stopped = false;
    let misses = 0;
    let timer: NodeJS.Timeout;
    const check = async () => {
      let live = false;
      let gone = false;
      if (pc.worker !== "") {
        try {
          const r = await this.conn.replies.request(workerSubject(pc.worker, "status"), encoder.encode(pc.requestId), { timeout: every });
          live = decoder.decode(r.data) === "live";
        } catch (err) {
          if (isTimeout(err) || isNoResponders(err)) gone = true;
          else live = true; // this connection is in trouble: its reconnect resynchronises the call
        }
      }
      if (stopped) return;
      misses = live ? 0 : misses + 1;
      if (gone || misses >= 2) {
        stopped = true;
        this.warn("the worker of a timed call did not vouch for it past its deadline; the call ends pending", { worker: pc.worker, request: pc.requestId });
        overdue();
        return;
      }
      timer = setTimeout(check, every);
    };
    timer = setTimeout(check, Math.max(0, deadline - Date.now()) + every);
    return {
      stop: () => {
        stopped = true;
        clearTimeout(timer);
      },
    };
  }

  /**
   * After a reconnect, replies and advisories sent meanwhile were lost: if
   * the caller's own lease is gone the workers have aborted its waits;
   * otherwise each call's worker is asked whether it still has the call.
   */
  private async followReconnects(): Promise<void> {
    for await (const s of this.conn.nc.status()) {
      if (this.closed) return;
      if (s.type !== "reconnect") continue;
      try {
        if (!(await this.lease.alive())) {
          for (const pc of this.calls.values()) this.end(pc, aborted("the agent was cut off from NATS longer than the release bound; its waits were ended"));
          const old = this.lease;
          this.lease = await Lease.hold(this.conn, RoleCaller, nuid.next(), this.bound);
          old.drop();
          continue;
        }
        for (const w of this.workers.values()) await (await w).recheck();
        for (const pc of this.calls.values()) {
          if (pc.worker === "") continue;
          try {
            const r = await this.conn.replies.request(workerSubject(pc.worker, "status"), encoder.encode(pc.requestId), { timeout: this.callTimeout });
            if (decoder.decode(r.data) === "gone") this.end(pc, workerLost);
          } catch (err) {
            if (isNoResponders(err)) this.end(pc, workerLost);
            else this.warn("check call after reconnect", { worker: pc.worker, request: pc.requestId, err });
          }
        }
      } catch (err) {
        this.warn("resynchronise after reconnect", { err });
      }
    }
  }
}

function acceptedFrame(m: Msg): Accepted | undefined {
  if (m.headers?.get(HeaderFrame) !== FrameAccepted) return undefined;
  try {
    const acc = JSON.parse(decoder.decode(m.data)) as Accepted;
    return acc.owner ? acc : undefined;
  } catch {
    return undefined;
  }
}

/** A call's final message: the result, the service's error, no worker at all, or a stopping worker's reply. */
function readReply(op: string, m: Msg): Msg | typeof workerLost | typeof refused {
  if (m.data.length === 0 && m.headers?.code === 503) {
    throw new HoldoverError(Code.Internal, `no userQuestions service answers ${serviceSubject(op)}: is a question worker running?`);
  }
  const stopped = m.headers?.get(HeaderOwnerStopped) ?? "";
  if (stopped === StoppedEndedWait) return workerLost;
  if (stopped !== "") return refused;
  const err = replyError(m);
  if (err) throw err;
  return m;
}

/** Rebuilds the typed error a reply carries; undefined for a successful reply. */
export function replyError(m: Msg): HoldoverError | undefined {
  const code = m.headers?.get(ErrorCodeHeader) ?? "";
  if (code === "") return undefined;
  try {
    const w = JSON.parse(decoder.decode(m.data)) as { code?: string; message?: string };
    if (w.code) return new HoldoverError(w.code, w.message ?? "");
  } catch {
    // the headers below
  }
  return new HoldoverError(code, m.headers?.get(ErrorHeader) ?? "");
}

function transportError(op: string, err: unknown): HoldoverError {
  if (isNoResponders(err)) {
    return new HoldoverError(Code.Internal, `no userQuestions service answers ${serviceSubject(op)}: is a question worker running?`);
  }
  return wrap(err, Code.Internal, `call ${serviceSubject(op)}`);
}

function isNoResponders(err: unknown): boolean {
  return err instanceof NoRespondersError || (err instanceof RequestError && err.isNoResponders());
}

function isTimeout(err: unknown): boolean {
  return err instanceof TimeoutError || (err instanceof RequestError && err.cause instanceof TimeoutError);
}

function aborted(message = "the question was aborted because its call was cancelled"): HoldoverError {
  return new HoldoverError(Code.AskAborted, message);
}

function retryDelay(n: number): number {
  return Math.min(10 * 2 ** Math.min(n, 6), 500);
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(aborted());
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(aborted());
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
