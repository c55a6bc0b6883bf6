// The TypeScript runtime of the per-Session cost test
// (integration/session_scale_test.go, TestSessionScale with
// HOLDOVER_SESSION_SCALE_RUNTIME=typescript), speaking the same lines on
// stdin and stdout as the Go runtime's faultproc: "ready" once connected,
// then "stats" answered with one JSON line of the process's memory after
// a collection, and "start N" by starting N more Sessions <prefix>-0, …,
// 64 at a time, with how long it took. Every Session runs runAgent with a
// scripted model that asks one timed question (timeout 1 s) nobody answers
// in time, says so and ends its Turn, then admits the late answer and ends
// that Turn too: faultproc's runtimeScript.
//
//   node --expose-gc dist/test/scale-runtime.js --nats URL --creds agent.creds [--prefix scale]

import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { Runtime, askUserQuestionTool, runAgent, type Model, type ModelRequest, type ModelResponse } from "../src/index.js";

const { values: flags } = parseArgs({
  options: {
    nats: { type: "string", default: "nats://127.0.0.1:4222" },
    creds: { type: "string", default: "" },
    prefix: { type: "string", default: "scale" },
  },
});

/** An error's message and its causes'. */
const why = (err: Error): string => (err.cause instanceof Error ? `${err.message}: ${why(err.cause)}` : err.message);
const warn = (msg: string, fields: Record<string, unknown> = {}) =>
  process.stderr.write(`level=WARN msg=${JSON.stringify(msg)} ${JSON.stringify(fields, (_k, v: unknown) => (v instanceof Error ? why(v) : v))}\n`);

/** faultproc's runtimeScript as a model: ask, go on when pending, take the late answer. */
const script: Model = {
  name: "scale-script",
  complete(req: ModelRequest): Promise<ModelResponse> {
    const last = req.messages[req.messages.length - 1];
    if (last?.role === "tool") return Promise.resolve({ text: "Going on without the database choice." });
    if (last?.role === "user" && last.text.includes("answer_to_pending_question")) return Promise.resolve({ text: `Got ${last.text}.` });
    return Promise.resolve({
      toolCalls: [{ id: "", name: "ask_user_question", arguments: { questions: [{ id: "db", question: "Which database?", options: [{ label: "Postgres" }, { label: "SQLite" }] }], timeout: 1 } }],
    });
  },
};

const rt = await Runtime.connect({ servers: flags.nats, ...(flags.creds ? { creds: flags.creds } : {}), warn });
const ask = askUserQuestionTool(rt, { mode: "timed" });
let started = 0;

/** Starts n more Sessions, 64 at a time; rejects with the first failure. */
async function start(n: number): Promise<number> {
  const began = performance.now();
  const ids = Array.from({ length: n }, (_, i) => `${flags.prefix}-${started + i}`);
  started += n;
  let next = 0;
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      for (let i = next++; i < ids.length; i = next++) {
        const s = await rt.open(ids[i]!);
        void runAgent(rt, s, { model: script, tools: [ask] }).catch((err: unknown) => warn("session stopped", { session: s.id, err }));
      }
    }),
  );
  return Math.round(performance.now() - began);
}

/** The process's memory after a collection (--expose-gc); V8 has no goroutines or stacks to count. */
function stats(): Record<string, number> {
  (globalThis as { gc?: () => void }).gc?.();
  const m = process.memoryUsage();
  return { rss: m.rss, heapInuse: m.heapUsed, stackInuse: 0, goroutines: 0 };
}

process.stdout.write("ready\n");
for await (const line of createInterface({ input: process.stdin })) {
  const [cmd, arg] = line.trim().split(/\s+/);
  if (cmd === "stats") {
    process.stdout.write(JSON.stringify(stats()) + "\n");
  } else if (cmd === "start" && arg !== undefined && /^\d+$/.test(arg)) {
    const n = Number(arg);
    const startMs = await start(n).catch((err: unknown) => {
      warn("start sessions", { err });
      process.exit(1);
    });
    process.stdout.write(JSON.stringify({ started: n, startMs }) + "\n");
  } else {
    warn("unknown command", { line });
    process.exit(2);
  }
}
// stdin ended: run until killed, as faultproc does.
setInterval(() => {}, 1 << 30);
