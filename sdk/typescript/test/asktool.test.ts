// ask_user_question against the real question worker of `holdover dev`:
// the schemas of both modes (M1, M2), the in-time batch (M7), the pending
// result (M6), argument errors, the live-root check (M9) and abort (W5).

import { describe, expect, it } from "vitest";
import { AskUserQuestion, Code, childSession, pendingResult, type Asker } from "../src/index.js";
import { answeringClient, eventually, plainConn, runtime, sessionId } from "./helpers.js";

const questions = [{ id: "db", question: "Which database?", options: [{ label: "Postgres" }, { label: "SQLite" }] }];
const unused: Asker = {
  ask: () => Promise.reject(new Error("not called")),
  askTimed: () => Promise.reject(new Error("not called")),
};

/** A live root of a fresh Session and the timed tool on its runtime. */
async function timedAsk() {
  const rt = await runtime();
  const sid = sessionId();
  const s = await rt.open(sid);
  return { rt, sid, s, tool: new AskUserQuestion(rt.caller, { mode: "timed" }) };
}

describe("ask_user_question", () => {
  it("offers timeout only in timed mode, with the configured default (M1, M2)", () => {
    const legacy = new AskUserQuestion(unused).schema();
    const timed = new AskUserQuestion(unused, { mode: "timed", defaultTimeout: -1 }).schema();
    expect(legacy.name).toBe("ask_user_question");
    expect(Object.keys((legacy.inputSchema as { properties: object }).properties)).toEqual(["intent", "questions"]);
    const timeout = (timed.inputSchema as { properties: Record<string, { description: string; minimum: number }> }).properties.timeout!;
    expect(timeout.minimum).toBe(-1);
    expect(timeout.description).toContain("default -1, which waits until the user answers");
    expect(() => new AskUserQuestion(unused, { mode: "timed", defaultTimeout: 0.5 })).toThrow(/timeout must be -1 or a positive integer/);
    expect(() => new AskUserQuestion(unused, { mode: "sometimes" as "timed" })).toThrow(/unknown ask_user_question mode/);
  });

  it("refuses bad arguments with a coded error the model can act on", async () => {
    const tool = new AskUserQuestion(unused, { mode: "timed" });
    const agent = { instance: "i", epoch: 1 };
    const call = (args: unknown) => tool.call({ session: "s", callId: "c", agent, arguments: args });
    expect(await call({ questions: [] })).toMatchObject({ isError: true, code: Code.EmptyQuestions });
    expect(await call({ questions, timeout: 0 })).toMatchObject({ isError: true, code: Code.BadTimeout, text: expect.stringMatching(/Correct the arguments/) });
    expect(await call({ questions, colour: "red" })).toMatchObject({ isError: true, code: Code.BadRequest });
    expect(await call({ questions: [questions[0], questions[0]] })).toMatchObject({ code: Code.BadRequest, text: expect.stringMatching(/used twice/) });
    expect(await tool.call({ session: "s", callId: "c", arguments: { questions } })).toMatchObject({ code: Code.CallerNotLive, text: "CALLER_NOT_LIVE: timed questions require a live agent" });
    const legacy = new AskUserQuestion(unused);
    expect(await legacy.call({ session: "s", callId: "c", arguments: { questions, timeout: 5 } })).toMatchObject({ code: Code.BadTimeout });
  });

  it("returns the answer batch when a Client answers in time (M7)", async () => {
    const { rt, sid, s, tool } = await timedAsk();
    const client = await answeringClient(await plainConn("gateway"), sid, [{ id: "db", selected: ["SQLite"] }]);
    const out = await tool.call({ session: sid, callId: "call_1", agent: s.ref, arguments: { questions, timeout: 30 } });
    expect(out).toEqual({ text: '{"answers":[{"id":"db","selected":["SQLite"]}]}' });
    expect(client.requests).toMatchObject([{ session: sid, callId: "call_1", questions, wait: { callId: "call_1", timed: true } }]);
    await eventually(() => client.cancels.includes("answered"), "the worker's cancel notice");
    await rt.release(s);
  });

  it("returns pending when no batch arrives in time (M6)", async () => {
    const { rt, sid, s, tool } = await timedAsk();
    const out = await tool.call({ session: sid, callId: "call_2", agent: s.ref, arguments: { questions, timeout: 1 } });
    expect(out).toEqual(pendingResult("call_2"));
    expect(JSON.parse(out.text)).toMatchObject({ pending: true, callId: "call_2", message: expect.stringContaining("not a skipped answer") });
    await rt.release(s);
  });

  it("is refused CALLER_NOT_LIVE for a stale instance and DELEGATED_CALLER for a child (M9)", async () => {
    const { sid, s: stale, tool } = await timedAsk();
    const other = await runtime();
    const live = await other.open(sid);
    const out = await tool.call({ session: sid, callId: "c1", agent: stale.ref, arguments: { questions, timeout: 5 } });
    expect(out).toMatchObject({ isError: true, code: Code.CallerNotLive });
    const child = await other.openChild(live, "call_7");
    expect(child.id).toBe(childSession(sid, "call_7"));
    const delegated = await new AskUserQuestion(other.caller, { mode: "timed" }).call({ session: child.id, callId: "c2", agent: child.ref, arguments: { questions } });
    expect(delegated).toMatchObject({ isError: true, code: Code.DelegatedCaller, text: expect.stringContaining("put the open question in your final result") });
    await other.release(child);
    await other.release(live);
  });

  it("aborts the wait when its signal aborts: ASK_ABORTED, and the worker ends it (W5)", async () => {
    const { rt, sid, s, tool } = await timedAsk();
    const client = await answeringClient(await plainConn("gateway"), sid, null);
    const turn = new AbortController();
    const pending = tool.call({ session: sid, callId: "call_3", agent: s.ref, arguments: { questions, timeout: 600 } }, turn.signal);
    await eventually(() => client.requests.length === 1, "the request reached the Client");
    turn.abort();
    expect(await pending).toMatchObject({ isError: true, code: Code.AskAborted });
    await eventually(() => client.cancels.includes("aborted"), "the worker aborted the wait");
    await rt.release(s);
  });

  it("asks a keyed blocking question for timeout -1 (M3)", async () => {
    const { rt, sid, s, tool } = await timedAsk();
    const client = await answeringClient(await plainConn("gateway"), sid, [{ id: "db", selected: [], custom: "DuckDB" }]);
    const out = await tool.call({ session: sid, callId: "call_4", agent: s.ref, arguments: { questions, timeout: -1 } });
    expect(out.text).toBe('{"answers":[{"id":"db","selected":[],"custom":"DuckDB"}]}');
    expect(client.requests).toMatchObject([{ wait: { callId: "call_4" } }]);
    expect((client.requests[0] as { wait: object }).wait).not.toHaveProperty("timed");
    await rt.release(s);
  });

  it("asks a legacy question unkeyed and blocking, and fails NO_PROVIDER with nobody to answer (M1, W6)", async () => {
    const rt = await runtime();
    const sid = sessionId();
    const s = await rt.open(sid);
    const legacy = new AskUserQuestion(rt.caller);
    const alone = await legacy.call({ session: sid, callId: "call_5", agent: s.ref, arguments: { questions } });
    expect(alone).toMatchObject({ isError: true, code: Code.NoProvider, text: expect.stringContaining("Nobody can answer questions in this Session right now") });
    const client = await answeringClient(await plainConn("gateway"), sid, [{ id: "db", selected: ["Postgres"] }]);
    const out = await legacy.call({ session: sid, callId: "call_6", agent: s.ref, arguments: { questions } });
    expect(out.text).toBe('{"answers":[{"id":"db","selected":["Postgres"]}]}');
    expect(client.requests).toHaveLength(1);
    expect(client.requests[0]).not.toHaveProperty("wait"); // untracked: no call id, no wait (M1)
    await rt.release(s);
  });
});
