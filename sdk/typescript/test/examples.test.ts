// The examples against `holdover dev` and a local Chat Completions server:
// the agent of examples/agent.ts, and the README's loop (examples/loop.ts),
// each asking a timed question that goes pending, going on, and taking the
// late answer as a user message (M6, D5, D8).

import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it, onTestFinished } from "vitest";
import { OpenAIModel } from "../src/openai.js";
import { runExample } from "../examples/agent.js";
import type { Runtime } from "../src/index.js";
import { askThenGoOn, fakeModel } from "./fake-model.js";
import { answer, awaitLog, creds, natsURL, runtime, sessionId } from "./helpers.js";
import type { LoggedEvent, OtherEvent } from "../src/sessionlog.js";

const sqlite = [{ id: "db", selected: ["SQLite"] }];

/** Waits for the pending result, answers late, and waits for the thanks; returns the log. */
async function answerLate(rt: Runtime, sid: string): Promise<Array<LoggedEvent | OtherEvent>> {
  await awaitLog(rt, sid, (log) => log.some((e) => e.type === "turn/end"), "the first Turn's end");
  const res = await answer(sid, "call_1", sqlite);
  expect(res.accepted).toBe(true);
  return awaitLog(rt, sid, (log) => log.filter((e) => e.type === "turn/end").length === 2, "the late answer's Turn");
}

function checkLateAnswer(log: Array<LoggedEvent | OtherEvent>): void {
  const result = log.find((e): e is LoggedEvent & { type: "tool/result" } => e.type === "tool/result")!;
  expect(JSON.parse(result.data.content![0]!.text)).toMatchObject({ pending: true, callId: "call_1" });
  const admitted = log.filter((e): e is LoggedEvent & { type: "user/message" } => e.type === "user/message" && (e as LoggedEvent & { type: "user/message" }).data.message.source.kind === "user-question-reply");
  expect(admitted).toHaveLength(1);
  const last = log.filter((e) => e.type === "assistant/message").at(-1) as LoggedEvent & { type: "assistant/message" };
  expect(last.data.content![0]!.text).toBe("Thanks, using SQLite then.");
}

describe("the examples", () => {
  it("examples/agent.ts asks, goes on while the question is pending, and takes the late answer", async () => {
    const model = await fakeModel(askThenGoOn);
    const sid = sessionId();
    const stop = new AbortController();
    const running = runExample({
      nats: natsURL(),
      creds: creds("agent"),
      promptCreds: creds("admin"),
      session: sid,
      prompt: "Set up the service.",
      model: new OpenAIModel({ baseURL: model.url, model: "fake" }),
      signal: stop.signal,
    });
    const rt = await runtime();
    checkLateAnswer(await answerLate(rt, sid));
    expect(model.requests[0]!.messages[0]).toMatchObject({ role: "system" });
    stop.abort();
    await running;
    expect(await rt.registry.lookup(sid)).toMatchObject({ instance: "" }); // released on stop
  });

  it("the README's loop is examples/loop.ts, and it works", async () => {
    const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
    const loop = readFileSync(new URL("../examples/loop.ts", import.meta.url), "utf8");
    expect(readme).toContain("```ts\n" + loop + "```");

    const model = await fakeModel(askThenGoOn);
    const sid = sessionId();
    const proc = spawn("node", [new URL("../dist/examples/loop.js", import.meta.url).pathname], {
      env: { ...process.env, HOLDOVER_NATS: natsURL(), HOLDOVER_NATS_CREDS: creds("agent"), HOLDOVER_PROMPT_CREDS: creds("admin"), OPENAI_BASE_URL: model.url, OPENAI_MODEL: "fake", SESSION: sid },
      stdio: ["ignore", "inherit", "inherit"],
    });
    onTestFinished(() => void proc.kill("SIGKILL"));
    const rt = await runtime();
    checkLateAnswer(await answerLate(rt, sid));
    proc.kill("SIGINT");
    expect(await new Promise((ok) => proc.once("exit", ok))).toBe(0); // released and closed
    expect(await rt.registry.lookup(sid)).toMatchObject({ instance: "" });
  });
});
