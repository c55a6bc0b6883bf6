// The shared inbox reader against a real server, on the agent role's
// credentials: one consumer per shard of Sessions, catch-up without a gap
// or a repeat, recovery of a vanished consumer, deletion of an empty one.

import { describe, expect, it } from "vitest";
import { randomBytes } from "node:crypto";
import { headers } from "@nats-io/nats-core";
import { jetstream, jetstreamManager, type JetStreamClient } from "@nats-io/jetstream";
import { Code, codeOf } from "../src/index.js";
import { InboxReader, MarkerHeader, type Queued } from "../src/inbox.js";
import { eventually, plainConn, runtime } from "./helpers.js";

/** What a reader delivered to one Session. */
class Got {
  readonly seqs: number[] = [];
  readonly ids: string[] = [];
  readonly deliver = (q: Queued): void => {
    this.seqs.push(q.seq);
    this.ids.push(q.message.id);
  };
  has = (n: number) => () => this.ids.length >= n;
}

const steered = (id: string) => JSON.stringify({ id, role: "user", content: [{ type: "text", text: id }], source: { kind: "user" } });
const reply = (id: string, callId: string) =>
  JSON.stringify({ id, role: "user", content: [{ type: "text", text: id }], source: { kind: "user-question-reply", callId, outcome: "answered" } });

/** Queues a steered message in sid's inbox as an admin may, and returns its stream seq. */
async function publish(js: JetStreamClient, sid: string, id: string): Promise<number> {
  return (await js.publish(`holdover.session.${sid}.inbox`, steered(id), { msgID: id })).seq;
}

/** A reader on a fresh agent runtime's connection (the agent role's permissions), closed when the test ends. */
async function reader(shardSize: number): Promise<{ rd: InboxReader; name: string }> {
  const rt = await runtime();
  const name = "rd-" + randomBytes(4).toString("hex");
  const rd = new InboxReader(rt.conn, { name, shardSize, warn: () => {} });
  return { rd, name };
}

async function admin() {
  const nc = await plainConn("admin");
  return { nc, js: jetstream(nc), jsm: await jetstreamManager(nc) };
}

async function consumerNames(name: string): Promise<string[]> {
  const { jsm } = await admin();
  const names: string[] = [];
  for await (const ci of jsm.consumers.list("SESSIONS")) if (ci.name.startsWith(`inbox-${name}-`)) names.push(ci.name);
  return names.sort();
}

const sid = (name: string, i: number | string) => `${name}-s${i}`;

describe("the shared inbox reader", () => {
  it("follows Sessions on shards of two through one consumer each, and each gets only its own messages in order", async () => {
    const { rd, name } = await reader(2);
    const { js } = await admin();
    const gots = new Map<string, Got>();
    const stops: Array<() => Promise<void>> = [];
    for (let i = 0; i < 5; i++) {
      const g = new Got();
      gots.set(sid(name, i), g);
      stops.push(await rd.follow(sid(name, i), 0, g.deliver));
    }
    expect(await consumerNames(name)).toEqual([`inbox-${name}-0`, `inbox-${name}-1`, `inbox-${name}-2`]);
    for (const s of gots.keys()) {
      await publish(js, s, `${s}-a`);
      await js.publish(`holdover.session.${s}.inbox`, "{not json");
      await js.publish(`holdover.session.${s}.inbox.c1`, reply(`${s}-b`, "c1"));
      const marker = headers();
      marker.set(MarkerHeader, "released");
      await js.publish(`holdover.session.${s}.inbox.c2`, "", { headers: marker });
      await publish(js, s, `${s}-c`);
    }
    for (const [s, g] of gots) {
      await eventually(g.has(3), `${s} gets its three messages`);
      expect(g.ids).toEqual([`${s}-a`, `${s}-b`, `${s}-c`]);
    }
    for (const stop of stops) await stop();
    await rd.close();
  });

  it("catches a joining Session up while messages are published, losing, repeating and reordering none", async () => {
    const { rd, name } = await reader(4);
    const { js, nc } = await admin();
    // Another Session keeps the consumer delivering, so s1 joins one that does.
    const stop0 = await rd.follow(sid(name, 0), 0, new Got().deliver);
    const s1 = sid(name, 1);
    const first = await publish(js, s1, "m0");
    // Published back to back on one connection, so stored in this order
    // while s1 joins, without a round trip each; the acknowledged "end",
    // sent after them, is stored after them.
    const n = 200;
    const published = (async () => {
      for (let i = 1; i <= n; i++) {
        nc.publish(`holdover.session.${s1}.inbox`, steered(`m${i}`));
        if (i % 20 === 0) await nc.flush();
      }
    })();
    const g = new Got();
    const stop1 = await rd.follow(s1, first, g.deliver);
    await published;
    await publish(js, s1, "end");
    await eventually(g.has(n + 1), "every message after m0", 20_000);
    expect(g.ids).toEqual([...Array.from({ length: n }, (_, i) => `m${i + 1}`), "end"]);
    expect(g.seqs).toEqual([...g.seqs].sort((a, b) => a - b));
    expect(new Set(g.seqs).size).toBe(g.seqs.length);
    await stop1();
    await stop0();
    await rd.close();
  });

  it("recovers a consumer deleted by hand, with the messages stored meanwhile", async () => {
    const { rd, name } = await reader(4);
    const { js, jsm } = await admin();
    const s1 = sid(name, 1);
    const g = new Got();
    const stop = await rd.follow(s1, 0, g.deliver);
    await publish(js, s1, "before");
    await eventually(g.has(1), "the first message");
    await jsm.consumers.delete("SESSIONS", `inbox-${name}-0`);
    for (let i = 0; i < 3; i++) await publish(js, s1, `after${i}`);
    await eventually(g.has(4), "the messages stored while the consumer was gone");
    expect(g.ids).toEqual(["before", "after0", "after1", "after2"]);
    expect(await consumerNames(name)).toEqual([`inbox-${name}-0`]);
    await stop();
    await rd.close();
  });

  it("deletes a consumer when its last Session leaves; following twice is CONFLICT, a wildcard id BAD_REQUEST", async () => {
    const { rd, name } = await reader(4);
    const { js } = await admin();
    const s1 = sid(name, 1);
    const g = new Got();
    const stop = await rd.follow(s1, 0, g.deliver);
    expect(codeOf(await rd.follow(s1, 0, g.deliver).catch((e: unknown) => e))).toBe(Code.Conflict);
    expect(codeOf(await rd.follow("s.*", 0, g.deliver).catch((e: unknown) => e))).toBe(Code.BadRequest);
    await stop();
    await publish(js, s1, "late");
    await eventually(async () => (await consumerNames(name)).length === 0, "the empty consumer is deleted");
    expect(g.ids).toEqual([]);
    // Following again reads the message left in the stream.
    const again = await rd.follow(s1, 0, g.deliver);
    await eventually(g.has(1), "the message left in the stream");
    expect(g.ids).toEqual(["late"]);
    await again();
    await rd.close();
    expect(await consumerNames(name)).toEqual([]);
  });
});
