// Liveness leases (docs/design.md, "One mechanism for every lease"): an
// ephemeral push consumer on the CLAIMS stream that carries no message and
// that NATS deletes the release bound after its holder's connection, and
// so its interest, is gone. A runtime instance holds a root lease for its
// live roots, a caller one for its waits; both watch other leases through
// the consumer's deletion advisory.

import { AckPolicy, DeliverPolicy } from "@nats-io/jetstream";
import { nanos, type Subscription } from "@nats-io/nats-core";
import { Code, wrap } from "./errors.js";
import { ClaimsStream, checkWord, deletedAdvisory, leaseName, leaseTopic } from "./names.js";
import { isConsumerNotFound, type Conn } from "./nats.js";

/** The default release bound, and the shortest one accepted (lease.DefaultReleaseBound, lease.MinReleaseBound). */
export const DefaultReleaseBoundMs = 2000;
export const MinReleaseBoundMs = 1000;

/** Applies the default and the floor to a configured release bound. */
export function releaseBound(ms: number | undefined): number {
  if (ms === undefined || ms === 0) return DefaultReleaseBoundMs;
  return Math.max(ms, MinReleaseBoundMs);
}

/** A lease this process holds. */
export class Lease {
  private constructor(
    private readonly conn: Conn,
    readonly name: string,
    private readonly sub: Subscription,
  ) {}

  /**
   * Holds the lease of role and id: subscribes to a fresh deliver subject,
   * then creates the consumer (in that order: a push consumer created before
   * its subscriber can be judged inactive at once).
   */
  static async hold(conn: Conn, role: string, id: string, boundMs: number): Promise<Lease> {
    checkWord("role", role);
    checkWord("id", id);
    const name = leaseName(role, id);
    const deliver = conn.inbox();
    const sub = conn.nc.subscribe(deliver, { callback: () => {} });
    try {
      await conn.jsm.consumers.add(ClaimsStream, {
        name,
        deliver_subject: deliver,
        filter_subject: leaseTopic(role, id),
        deliver_policy: DeliverPolicy.All,
        ack_policy: AckPolicy.None,
        inactive_threshold: nanos(boundMs),
        mem_storage: true,
        num_replicas: 1,
        metadata: { role, id },
      });
    } catch (err) {
      sub.unsubscribe();
      throw wrap(err, Code.Internal, `create ${name}`);
    }
    return new Lease(conn, name, sub);
  }

  /** Whether the lease still exists; one NATS deleted while this process was cut off stays deleted. */
  alive(): Promise<boolean> {
    return leaseExists(this.conn, this.name);
  }

  /**
   * Stops holding the lease without deleting it: NATS deletes it the
   * release bound later. An agent may not delete consumers (package auth),
   * so this is how its leases end, as in Go (lease.Lease.Drop).
   */
  drop(): void {
    if (!this.sub.isClosed()) this.sub.unsubscribe();
  }
}

/** Looks a lease or claim up by its consumer name. */
export async function leaseExists(conn: Conn, name: string): Promise<boolean> {
  try {
    await conn.jsm.consumers.info(ClaimsStream, name);
    return true;
  } catch (err) {
    if (isConsumerNotFound(err)) return false;
    throw wrap(err, Code.Internal, `look up ${name}`);
  }
}

/** One watch of another process's lease. */
export interface LeaseWatch {
  /** Resolves once the lease is gone. */
  readonly lost: Promise<void>;
  /**
   * Calls fn once the lease is gone (at once if it is), until the returned
   * function is called: a kept watch outlives the many calls that follow it.
   */
  onLost(fn: () => void): () => void;
  /** Whether a lookup found it and it has not ended since. */
  alive(): boolean;
  /** Looks the lease up again: after a reconnect, advisories sent meanwhile never arrive. */
  recheck(): Promise<void>;
  stop(): void;
}

/**
 * Watches the lease named name: subscribes to its deletion advisory, then
 * looks it up on the same connection, so a deletion is either seen by the
 * lookup or advised to the subscription.
 */
export async function watchLease(conn: Conn, name: string, onError: (err: unknown) => void): Promise<LeaseWatch> {
  let ended = false;
  let found = false;
  let resolve!: () => void;
  const lost = new Promise<void>((r) => (resolve = r));
  const listeners = new Set<() => void>();
  const end = () => {
    if (ended) return;
    ended = true;
    sub.unsubscribe();
    resolve();
    for (const fn of listeners) fn();
    listeners.clear();
  };
  const sub = conn.nc.subscribe(deletedAdvisory(name), { callback: () => end() });
  const check = async () => {
    try {
      if (await leaseExists(conn, name)) found = true;
      else end();
    } catch (err) {
      onError(err); // undecided: the next reconnect decides
    }
  };
  await check();
  return {
    lost,
    onLost: (fn) => {
      if (ended) {
        fn();
        return () => {};
      }
      listeners.add(fn);
      return () => listeners.delete(fn);
    },
    alive: () => found && !ended,
    recheck: check,
    stop: () => {
      if (!sub.isClosed()) sub.unsubscribe();
    },
  };
}
