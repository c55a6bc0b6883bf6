// runAgent's rules against a real server, with models written in the test:
// a stale root stops before its next model request (M9), a foreign append
// makes a live root rebuild and go on, a Turn that ends with a message
// still queued discards it (D8), and a cancelled loop records nothing more.

import { describe, expect, it } from "vitest";
import { jetstream } from "@nats-io/jetstream";
import { Code, codeOf, runAgent, type Model, type ModelRequest, type ModelResponse } from "../src/index.js";
import { awaitLog, plainConn, runtime, sessionId, steer, types } from "./helpers.js";

/** A model whose every request goes to answer, in order. */
function model(answer: (req: ModelRequest, n: number, signal?: AbortSignal) => Promise<ModelResponse>): Model & { requests: ModelRequest[] } {
  const requests: ModelRequest[] = [];
  return { name: "test-model", requests, complete: (req, signal) => (requests.push(req), answer(req, requests.length, signal)) };
}

describe("runAgent", () => {
  it("stops with CALLER_NOT_LIVE once another instance took the Session over (M9)", async () => {
    const sid = sessionId();
    const rt = await runtime();
    const other = await runtime();
    const s = await rt.open(sid);
    const m = model(async () => {
      await other.open(sid); // a takeover while the model thinks
      return { toolCalls: [{ id: "c1", name: "nothing", arguments: {} }] };
    });
    await steer(sid, "go");
    const err = await runAgent(rt, s, { model: m, tools: [] }).catch((e: unknown) => e);
    expect(codeOf(err)).toBe(Code.CallerNotLive);
    expect(m.requests).toHaveLength(1);
    const log = await rt.log.read(sid);
    expect(log.at(-1)).toMatchObject({ type: "step/end" }); // the unknown tool's error, then no request
    expect(log.find((e) => e.type === "tool/result")).toMatchObject({ data: { isError: true, error: { code: "BAD_REQUEST" } } });
  });

  it("rebuilds from the log after a foreign append and goes on while it is the live root", async () => {
    const sid = sessionId();
    const rt = await runtime();
    const s = await rt.open(sid);
    const stop = new AbortController();
    const m = model(async (_req, n) => {
      if (n === 1) {
        await rt.log.append(sid, await rt.log.last(sid), "assistant/message", { id: "foreign", content: [{ type: "text", text: "from elsewhere" }] });
        return { text: "this append loses" };
      }
      return { text: "done" };
    });
    await steer(sid, "go");
    const running = runAgent(rt, s, { model: m, tools: [], signal: stop.signal });
    const log = await awaitLog(rt, sid, (l) => types(l).includes("turn/end"), "the Turn's end");
    stop.abort();
    await running;
    // The losing append stored nothing; the rebuilt state ends in the
    // foreign answer, which owes no model request, so the Turn ends.
    expect(log.filter((e) => e.type === "assistant/message").map((e) => (e.data as { id: string }).id)).toEqual(["foreign"]);
    expect(log.at(-1)).toMatchObject({ type: "turn/end", data: { reason: "done" } });
    expect(s.state.history.map((x) => x.text)).toEqual(["go", "from elsewhere"]);
    expect(m.requests).toHaveLength(1);
    await rt.release(s);
  });

  it("discards what a Turn did not admit when the model fails (D8)", async () => {
    const sid = sessionId();
    const rt = await runtime();
    const s = await rt.open(sid);
    const stop = new AbortController();
    const js = jetstream(await plainConn());
    const m = model(async () => {
      await js.publish(`holdover.session.${sid}.inbox`, JSON.stringify({ id: "late", role: "user", content: [{ type: "text", text: "also this" }], source: { kind: "user" } }), { msgID: `late-${sid}` });
      await awaitLog(rt, sid, (l) => l.filter((e) => e.type === "agent/inbox/spliced").length === 2, "the second splice");
      throw new Error("the model server is down");
    });
    await steer(sid, "go");
    const running = runAgent(rt, s, { model: m, tools: [], signal: stop.signal });
    const log = await awaitLog(rt, sid, (l) => types(l).includes("turn/end"), "the Turn's end");
    stop.abort();
    await running;
    expect(log.slice(-2)).toMatchObject([
      { type: "agent/inbox/discarded", data: { messageId: "late", reason: "the Turn ended before admitting it" } },
      { type: "turn/end", data: { reason: "model failed: the model server is down" } },
    ]);
    await rt.release(s);
  });

  it("records nothing more once cancelled: a running call is left for the resume repair", async () => {
    const sid = sessionId();
    const rt = await runtime();
    const s = await rt.open(sid);
    const stop = new AbortController();
    let calls = 0;
    const tool = {
      schema: { name: "wait", inputSchema: { type: "object" } },
      call: (_ctx: unknown, signal: AbortSignal) =>
        new Promise<{ text: string }>((ok) => {
          calls++;
          signal.addEventListener("abort", () => ok({ text: "interrupted" }));
        }),
    };
    const m = model(async () => ({ toolCalls: [{ id: "w1", name: "wait", arguments: {} }] }));
    await steer(sid, "go");
    const running = runAgent(rt, s, { model: m, tools: [tool], signal: stop.signal });
    await awaitLog(rt, sid, (l) => types(l).includes("tool/call"), "the tool call");
    expect(calls).toBe(1);
    stop.abort();
    await running;
    const log = await rt.log.read(sid);
    expect(log.at(-1)).toMatchObject({ type: "tool/call", data: { callId: "w1" } });
    await rt.release(s);
    const resumed = await rt.open(sid);
    expect((await rt.log.read(sid)).at(-1)).toMatchObject({ type: "tool/result", data: { callId: "w1", error: { code: "TOOL_OUTCOME_UNKNOWN" } } });
    await rt.release(resumed);
  });
});
