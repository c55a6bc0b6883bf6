// The live root against a real server: registration and fencing (M9),
// resume repair (D3), the inbox's splice, claim and admission (D8), discard
// and the resume pool (D7).

import { describe, expect, it } from "vitest";
import { headers } from "@nats-io/nats-core";
import { jetstream } from "@nats-io/jetstream";
import { Code, InterruptedText, codeOf } from "../src/index.js";
import { awaitLog, eventually, plainConn, runtime, sessionId, types } from "./helpers.js";

const userMessage = (id: string, text: string) => ({ id, role: "user", content: [{ type: "text", text }], source: { kind: "user" } });

describe("a Session's live root", () => {
  it("registers a new epoch on each open, and the old root is fenced out", async () => {
    const sid = sessionId();
    const a = await runtime();
    const b = await runtime();
    const first = await a.open(sid);
    expect(first.ref.epoch).toBe(1);
    await first.beginTurn();

    const second = await b.open(sid);
    expect(second.ref).toEqual({ instance: b.instance, epoch: 2 });
    await expect(first.checkLive()).rejects.toMatchObject({ code: Code.CallerNotLive });
    await second.record("step/end", { turn: second.state.turn, step: 1 });
    // The stale root still thinks seq 1 is last: its append loses.
    const err = await first.record("turn/end", { turn: first.state.turn }).catch((e: unknown) => e);
    expect(codeOf(err)).toBe(Code.Conflict);
    const rec = await a.registry.lookup(sid);
    expect(rec).toMatchObject({ instance: b.instance, epoch: 2 });
    await a.release(first); // a stale release changes nothing
    expect(await a.registry.lookup(sid)).toMatchObject({ instance: b.instance, epoch: 2 });
    await b.release(second);
    expect(await a.registry.lookup(sid)).toMatchObject({ instance: "", epoch: 2 });
  });

  it("repairs a tool call recorded without a result as TOOL_OUTCOME_UNKNOWN, once (D3)", async () => {
    const sid = sessionId();
    const a = await runtime();
    const s = await a.open(sid);
    const turn = await s.beginTurn();
    await s.beginStep("m", []);
    await s.record("tool/call", { turn, callId: "call_1", name: "ask_user_question", arguments: { questions: [] } });
    await s.stop(); // as a crash: nothing more recorded, nothing released

    const b = await runtime();
    const resumed = await b.open(sid);
    const log = await b.log.read(sid);
    expect(types(log)).toEqual(["turn/start", "request/header", "tool/call", "tool/result"]);
    expect(log[3]!.data).toEqual({
      turn,
      callId: "call_1",
      name: "ask_user_question",
      content: [{ type: "text", text: InterruptedText }],
      isError: true,
      error: { code: "TOOL_OUTCOME_UNKNOWN" },
    });
    expect(resumed.state.open).toEqual([]);
    await b.release(resumed);
    const again = await b.open(sid);
    expect(types(await b.log.read(sid))).toHaveLength(4);
    await b.release(again);
  });

  it("splices inbox messages as they come, passes over markers, and admits them at the step boundary (D8)", async () => {
    const sid = sessionId();
    const rt = await runtime();
    const s = await rt.open(sid);
    const js = jetstream(await plainConn());
    const marker = headers();
    marker.set("Holdover-Reservation", "released");
    await js.publish(`holdover.session.${sid}.inbox.call_9`, new Uint8Array(), { headers: marker });
    await js.publish(`holdover.session.${sid}.inbox`, JSON.stringify(userMessage("m1", "hello")), { msgID: "m1" });
    await js.publish(`holdover.session.${sid}.inbox`, JSON.stringify(userMessage("m1", "hello")), { msgID: "m1" }); // a retry: one message

    await s.waitForInput();
    await awaitLog(rt, sid, (log) => types(log).includes("agent/inbox/spliced"), "the splice");
    const turn = await s.beginTurn();
    const admitted = await s.beginStep("m", []);
    expect(admitted.map((m) => m.id)).toEqual(["m1"]);
    const log = await rt.log.read(sid);
    expect(types(log)).toEqual(["agent/inbox/spliced", "turn/start", "agent/inbox/claimed", "user/message", "request/header"]);
    expect(log[0]!.data).toMatchObject({ message: userMessage("m1", "hello"), inboxSeq: expect.any(Number) });
    expect(log[3]!.data).toEqual({ turn, message: userMessage("m1", "hello") });
    expect(s.state.history).toEqual([{ role: "user", text: "hello" }]);
    await rt.release(s);
  });

  it("discards a queued message on request, and refuses one no longer queued", async () => {
    const sid = sessionId();
    const rt = await runtime();
    const s = await rt.open(sid);
    const nc = await plainConn();
    await jetstream(nc).publish(`holdover.session.${sid}.inbox`, JSON.stringify(userMessage("m2", "never mind")), { msgID: "m2" });
    await s.waitForInput();
    const ask = async (body: unknown) => (await nc.request(`holdover.session.${sid}.discard`, JSON.stringify(body))).json();
    expect(await ask({ messageId: "m2", reason: "the user took it back" })).toEqual({});
    expect(await ask({ messageId: "m2" })).toMatchObject({ error: { code: "CONFLICT" } });
    expect(await ask({ messageId: "nope" })).toMatchObject({ error: { code: "NOT_FOUND" } });
    expect(await ask({})).toMatchObject({ error: { code: "BAD_REQUEST" } });
    expect(await ask({ session: "another", messageId: "m3" })).toMatchObject({ error: { code: "BAD_REQUEST" } });
    expect(await ask({ session: sid, messageId: "nope" })).toMatchObject({ error: { code: "NOT_FOUND" } });
    const log = await rt.log.read(sid);
    expect(log.at(-1)).toMatchObject({ type: "agent/inbox/discarded", data: { messageId: "m2", reason: "the user took it back" } });
    await rt.release(s);
  });

  it("discards a message the reader has not delivered yet: spliced then, once, and never NOT_FOUND (issue 20)", async () => {
    const sid = sessionId();
    const rt = await runtime();
    const s = await rt.open(sid);
    const nc = await plainConn();
    const js = jetstream(nc);
    const ask = async (body: unknown) => (await nc.request(`holdover.session.${sid}.discard`, JSON.stringify(body))).json();
    const n = 20;
    for (let i = 0; i < n; i++) {
      // Each is discarded the moment it is stored, racing the reader's delivery.
      // Message ids are the stream's Nats-Msg-Id, deduplicated across Sessions: unique to this test.
      const id = `${sid}-m${i}`;
      await js.publish(`holdover.session.${sid}.inbox`, JSON.stringify(userMessage(id, "never mind")), { msgID: id });
      expect(await ask({ messageId: id, reason: "taken back" }), `message ${i}`).toEqual({});
    }
    const log = await awaitLog(rt, sid, (l) => types(l).filter((t) => t === "agent/inbox/discarded").length === n, "every discard");
    expect(types(log).filter((t) => t === "agent/inbox/spliced")).toHaveLength(n);
    expect(types(log).filter((t) => t === "agent/inbox/discarded")).toHaveLength(n);
    expect(s.state.queue).toEqual([]);
    await rt.release(s);
  });

  it("answers discard and resume requests only from the inbox of a role that may send them (issue 24)", async () => {
    const refused: Array<Record<string, unknown>> = [];
    const rt = await runtime({ warn: (msg, fields) => msg === "request refused for its origin" && refused.push(fields ?? {}) });
    const sid = sessionId();
    const s = await rt.open(sid);
    const admin = await plainConn();
    const js = jetstream(admin);
    const id = `${sid}-m1`;
    await js.publish(`holdover.session.${sid}.inbox`, JSON.stringify(userMessage(id, "never mind")), { msgID: id });
    await s.waitForInput();
    const resumed: string[] = [];
    const leave = await rt.joinPool(async (sid) => {
      resumed.push(sid);
    });

    // A stored message replayed onto the subjects (no reply), and requests
    // whose reply names a stream: the answer would be stored there.
    const other = sessionId();
    const into = `holdover.session.${other}.inbox.call_1`;
    const gateway = await plainConn("gateway");
    const discard = JSON.stringify({ messageId: id });
    admin.publish(`holdover.session.${sid}.discard`, discard);
    gateway.publish(`holdover.session.${sid}.discard`, discard, { reply: into });
    admin.publish("holdover.runtime.resume", JSON.stringify({ session: other }));
    admin.publish("holdover.runtime.resume", JSON.stringify({ session: other }), { reply: `$KV.userQuestions.${other}` });
    await eventually(async () => refused.length === 4, "four refusals");
    expect(refused.map((f) => f.endpoint).sort()).toEqual(["discard", "discard", "resume", "resume"]);

    const jsm = await js.jetstreamManager();
    expect(await jsm.streams.getMessage("SESSIONS", { last_by_subj: into }), "nothing answered into the stream").toBeNull();
    expect(await jsm.streams.getMessage("KV_userQuestions", { last_by_subj: `$KV.userQuestions.${other}` })).toBeNull();
    expect(resumed).toEqual([]);
    expect(s.state.queue.map((q) => q.message.id)).toEqual([id]);
    // The same requests from a gateway's and a worker's inbox are served.
    expect((await gateway.request(`holdover.session.${sid}.discard`, discard)).json()).toEqual({});
    expect((await (await plainConn("worker")).request("holdover.runtime.resume", JSON.stringify({ session: other }))).json()).toEqual({ instance: rt.instance });
    expect(resumed).toEqual([other]);
    leave();
    await rt.release(s);
  });

  it("joins the resume pool: a resume request reaches one instance, which names itself (D7)", async () => {
    const rt = await runtime();
    const resumed: string[] = [];
    const leave = await rt.joinPool(async (sid) => {
      resumed.push(sid);
    });
    const nc = await plainConn();
    const sid = sessionId();
    expect((await nc.request("holdover.runtime.resume", JSON.stringify({ session: sid }))).json()).toEqual({ instance: rt.instance });
    expect((await nc.request("holdover.runtime.resume", JSON.stringify({ session: "a.b" }))).json()).toMatchObject({ error: { code: "BAD_REQUEST" } });
    expect(resumed).toEqual([sid]);
    leave();
  });

  it("holds its root lease while it runs, and NATS ends it a release bound after close", async () => {
    const rt = await runtime();
    const nc = await plainConn();
    const jsm = await jetstream(nc).jetstreamManager();
    const info = await jsm.consumers.info("CLAIMS", rt.rootLeaseName);
    expect(info.config.metadata).toMatchObject({ role: "root", id: rt.instance });
    await rt.close();
    await eventually(async () => jsm.consumers.info("CLAIMS", rt.rootLeaseName).then(() => false, () => true), "the lease is gone");
  });

  it("keeps every reply and deliver subject under the agent role's inbox prefix, and its leases' subjects name their roles", async () => {
    const rt = await runtime(); // on the agent's credentials, which allow no other prefix
    const jsm = await jetstream(await plainConn()).jetstreamManager();
    for (const [lease, role] of [[rt.rootLeaseName, "root"], [rt.caller.leaseName, "caller"]] as const) {
      const cfg = (await jsm.consumers.info("CLAIMS", lease)).config;
      expect(cfg.deliver_subject).toMatch(/^_INBOX\.agent\./);
      expect(cfg.filter_subject).toMatch(new RegExp(`^holdover\\.claim\\.lease\\.${role}\\.`));
    }
    const s = await rt.open(sessionId()); // the registry, the log and the inbox reader, all answered under the prefix
    await s.beginTurn();
    await rt.release(s);
  });
});
