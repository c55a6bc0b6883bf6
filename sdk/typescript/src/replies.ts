// Every reply a runtime waits for on its connection, on one subscription:
// the JetStream, KV and service requests, and the caller's multi-frame
// calls. The NATS client's own request path costs two promises, a timer
// and a captured Error for every request it settles; at thousands of
// Sessions that and the collection it caused were a third of the
// runtime's CPU. Here a request costs one promise and one map entry, and
// one timer serves every request's timeout.

import { NoRespondersError, PermissionViolationError, RequestError, TimeoutError, createInbox, type Msg, type MsgHdrs, type NatsConnection } from "@nats-io/nats-core";

/** What Replies.request takes: the options of nc.request that a reply subject of our own serves. */
export interface RequestOptions {
  /** Milliseconds until the request fails with TimeoutError. */
  timeout: number;
  headers?: MsgHdrs;
}

/** A reply subject of our own: its messages go to one handler until it is closed. */
export interface ReplySubject {
  readonly subject: string;
  close(): void;
}

/**
 * A request waiting for its reply. It stays in its timeout's queue until
 * its deadline, even settled; settling drops what it holds (its promise,
 * and through it the reply).
 */
interface Waiting {
  readonly token: string;
  readonly subject: string;
  /** On performance.now()'s clock. */
  readonly deadline: number;
  settled: boolean;
  resolve: (m: Msg) => void;
  reject: (err: Error) => void;
}

const settledAlready = () => {};

/**
 * The reply subjects of one connection: all below one prefix under its
 * inbox prefix, read by one subscription, and routed by their last token.
 * request() is nc.request, with its errors: TimeoutError; RequestError
 * whose cause is NoRespondersError, or the PermissionViolationError of a
 * refused publish. The JetStream client sends through it (openConn).
 */
export class Replies {
  private readonly prefix: string;
  private readonly handlers = new Map<string, (m: Msg) => void>();
  private next = 0;
  /**
   * The waiting requests, one queue per timeout: a queue's deadlines grow
   * in the order its requests were sent, so its head is its earliest, and
   * one timer, armed for the earliest head, serves them all.
   */
  private readonly queues = new Map<number, { items: Waiting[]; head: number }>();
  private timer?: NodeJS.Timeout;
  private timerAt = Infinity;

  constructor(
    private readonly nc: NatsConnection,
    inboxPrefix: string,
  ) {
    this.prefix = createInbox(inboxPrefix) + ".";
    // It lives as long as the connection.
    nc.subscribe(this.prefix + "*", {
      callback: (err, m) => {
        if (!err) this.handlers.get(m.subject.slice(this.prefix.length))?.(m); // a refusal: followErrors
      },
    });
    void this.followErrors();
  }

  /** A fresh reply subject whose messages go to fn until it is closed. */
  open(fn: (m: Msg) => void): ReplySubject {
    const token = (this.next++).toString(36);
    this.handlers.set(token, fn);
    return { subject: this.prefix + token, close: () => this.handlers.delete(token) };
  }

  /** Publishes payload to subject and resolves with the first reply. */
  request(subject: string, payload: Uint8Array | string | undefined, opts: RequestOptions): Promise<Msg> {
    return new Promise<Msg>((resolve, reject) => {
      const w: Waiting = { token: (this.next++).toString(36), subject, deadline: performance.now() + opts.timeout, settled: false, resolve, reject };
      this.handlers.set(w.token, (m) => {
        if (m.data.length === 0 && m.headers?.code === 503) this.fail(w, refusal(new NoRespondersError(subject)));
        else this.settle(w, m);
      });
      try {
        this.nc.publish(subject, payload, { reply: this.prefix + w.token, ...(opts.headers ? { headers: opts.headers } : {}) });
      } catch (err) {
        this.fail(w, err as Error);
        return;
      }
      this.enqueue(w, opts.timeout);
    });
  }

  private settle(w: Waiting, m: Msg): void {
    const resolve = w.resolve;
    this.forget(w);
    resolve(m);
  }

  private fail(w: Waiting, err: Error): void {
    const reject = w.reject;
    this.forget(w);
    reject(err);
  }

  private forget(w: Waiting): void {
    w.settled = true;
    w.resolve = w.reject = settledAlready;
    this.handlers.delete(w.token);
  }

  private enqueue(w: Waiting, timeout: number): void {
    let q = this.queues.get(timeout);
    if (!q) this.queues.set(timeout, (q = { items: [], head: 0 }));
    q.items.push(w);
    if (w.deadline < this.timerAt) this.arm(w.deadline);
  }

  private arm(at: number): void {
    clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => this.expire(), Math.max(0, at - performance.now()));
  }

  /** Fails the requests past their deadline, drops the settled ones there, and arms the timer for the next deadline. */
  private expire(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    const now = performance.now();
    let earliest = Infinity;
    for (const [timeout, q] of this.queues) {
      for (let w = q.items[q.head]; w && (w.settled || w.deadline <= now); w = q.items[++q.head]) {
        if (!w.settled) this.fail(w, new TimeoutError());
      }
      if (q.head === q.items.length) {
        this.queues.delete(timeout);
        continue;
      }
      if (q.head > 1024 && q.head * 2 > q.items.length) {
        q.items = q.items.slice(q.head);
        q.head = 0;
      }
      earliest = Math.min(earliest, q.items[q.head]!.deadline);
    }
    if (earliest < Infinity) this.arm(earliest);
  }

  /** The waiting requests, oldest first in each queue. */
  private *waiting(): Generator<Waiting> {
    for (const q of this.queues.values()) for (let i = q.head; i < q.items.length; i++) if (!q.items[i]!.settled) yield q.items[i]!;
  }

  /**
   * Fails fast what the server refuses, as nc.request does: a request whose
   * publish it refused, or every waiting request once it refuses the
   * subscription. A closed connection fails every waiting request; one sent
   * after fails to publish.
   */
  private async followErrors(): Promise<void> {
    for await (const s of this.nc.status()) {
      if (s.type !== "error" || !(s.error instanceof PermissionViolationError)) continue;
      const pe = s.error;
      if (pe.operation === "subscription" && pe.subject === this.prefix + "*") {
        for (const w of this.waiting()) this.fail(w, refusal(pe));
      } else if (pe.operation === "publish") {
        for (const w of this.waiting()) {
          if (w.subject !== pe.subject) continue;
          this.fail(w, refusal(pe));
          break;
        }
      }
    }
    const closed = new RequestError("connection closed");
    for (const w of this.waiting()) this.fail(w, closed);
    clearTimeout(this.timer);
  }
}

/** A request's failure with its cause, as nc.request gives it. */
function refusal(cause: Error): RequestError {
  return new RequestError(cause.message, { cause });
}
