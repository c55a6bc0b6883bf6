// The live-root registry (liveRoots KV, key = Session id): which runtime
// instance is the live root of each Session, under which epoch, and
// whether it runs as a child owned by another agent (M9). Written only
// with compare-and-set, so two instances taking over a Session at once
// each get their own epoch and exactly one of them is live.

import { Code, HoldoverError, wrap } from "./errors.js";
import { checkSession, MaxIDLength } from "./names.js";
import { decoder, encoder, isConflict, type Conn } from "./nats.js";
import type { AgentRef, LiveRootRecord } from "./wire.js";

const maxCASRetries = 32;

export class Registry {
  constructor(private readonly conn: Conn) {}

  /** Makes instance the live root of sid and returns its new epoch. */
  register(sid: string, instance: string): Promise<number> {
    return this.registerAs(sid, instance, "");
  }

  /** Registers instance as the runtime of sid running as a child owned by owner: its questions fail DELEGATED_CALLER. */
  registerChild(sid: string, instance: string, owner: string): Promise<number> {
    checkName("owner", owner);
    return this.registerAs(sid, instance, owner);
  }

  private async registerAs(sid: string, instance: string, owner: string): Promise<number> {
    checkName("instance", instance);
    let epoch = 0;
    await this.update(sid, (old) => {
      epoch = (old?.epoch ?? 0) + 1;
      const rec: LiveRootRecord = { instance, epoch, since: new Date().toISOString() };
      if (owner !== "") rec.owner = owner;
      return rec;
    });
    return epoch;
  }

  /** Ends ref's registration of sid; one that is no longer current is left alone. */
  async release(sid: string, ref: AgentRef): Promise<void> {
    await this.update(sid, (old) => {
      if (!old || old.instance === "" || old.instance !== ref.instance || old.epoch !== ref.epoch) return undefined;
      return { instance: "", epoch: old.epoch, since: new Date().toISOString() };
    });
  }

  /** sid's record, if any. */
  async lookup(sid: string): Promise<LiveRootRecord | undefined> {
    return (await this.get(sid))?.rec;
  }

  /**
   * Throws unless ref is the exact live root of sid (M9): DELEGATED_CALLER
   * for a child, CALLER_NOT_LIVE for any other mismatch.
   */
  async check(sid: string, ref: AgentRef): Promise<void> {
    if (ref.owner) throw delegated(sid, ref.owner);
    const rec = await this.lookup(sid);
    if (!rec || rec.instance === "") {
      throw new HoldoverError(Code.CallerNotLive, `session ${sid} has no live runtime root; instance ${JSON.stringify(ref.instance)} (epoch ${ref.epoch}) may not ask the user`);
    }
    if (rec.instance !== ref.instance || rec.epoch !== ref.epoch) {
      throw new HoldoverError(Code.CallerNotLive, `instance ${JSON.stringify(ref.instance)} (epoch ${ref.epoch}) is not the live runtime root of session ${sid}, which is now ${JSON.stringify(rec.instance)} (epoch ${rec.epoch})`);
    }
    if (rec.owner) throw delegated(sid, rec.owner);
  }

  private async update(sid: string, change: (old: LiveRootRecord | undefined) => LiveRootRecord | undefined): Promise<void> {
    checkSession(sid);
    for (let i = 0; i < maxCASRetries; i++) {
      const old = await this.get(sid);
      const rec = change(old?.rec);
      if (!rec) return;
      const data = encoder.encode(JSON.stringify(rec));
      try {
        if (old) await this.conn.roots.update(sid, data, old.revision);
        else await this.conn.roots.create(sid, data);
        return;
      } catch (err) {
        if (isConflict(err)) continue; // another writer won: read its record and try again
        throw wrap(err, Code.Internal, `write live root of ${sid}`);
      }
    }
    throw new HoldoverError(Code.Conflict, `live root of ${sid} kept changing under ${maxCASRetries} attempts to update it`);
  }

  private async get(sid: string): Promise<{ rec: LiveRootRecord; revision: number } | undefined> {
    checkSession(sid);
    let entry;
    try {
      entry = await this.conn.roots.get(sid);
    } catch (err) {
      throw wrap(err, Code.Internal, `read live root of ${sid}`);
    }
    if (!entry || entry.operation !== "PUT") {
      return entry ? { rec: { instance: "", epoch: 0, since: "" }, revision: entry.revision } : undefined;
    }
    try {
      return { rec: JSON.parse(decoder.decode(entry.value)) as LiveRootRecord, revision: entry.revision };
    } catch (err) {
      throw wrap(err, Code.Internal, `live root of ${sid} is not a registry record`);
    }
  }
}

function delegated(sid: string, owner: string): HoldoverError {
  return new HoldoverError(
    Code.DelegatedCaller,
    `session ${sid} runs as a child owned by agent ${JSON.stringify(owner)}, so it cannot ask the user directly; put the open question in your final result for ${JSON.stringify(owner)} to ask`,
  );
}

function checkName(what: string, v: string): void {
  if (v === "") throw new HoldoverError(Code.BadRequest, `${what} is empty`);
  const n = Buffer.byteLength(v);
  if (n > MaxIDLength) throw new HoldoverError(Code.BadRequest, `${what} is ${n} bytes, over the ${MaxIDLength} byte limit`);
}
