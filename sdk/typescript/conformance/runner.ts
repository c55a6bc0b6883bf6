// The conformance suite's TypeScript runner: the SDK behind the same
// command line as the Go runtime's `holdover agent`, so one driver starts
// either (integration/conformance_test.go). It connects with --creds (the
// agent role's), serves --session (queuing --prompt when the Session is
// new, on --prompt-creds: an agent may not write an inbox) and, with
// --pool, resume requests, with an OpenAI-compatible model at --model-url,
// until SIGTERM.
//
//   node dist/conformance/runner.js --nats URL [--creds agent.creds] [--session S --prompt P --prompt-creds admin.creds] [--pool]
//        --model-url URL --model NAME [--ask-mode timed] [--ask-timeout 120] [--release-bound 1s]

import { parseArgs } from "node:util";
import { Runtime, askUserQuestionTool, runAgent, steer, subagentTool, type Session, type Tool } from "../src/index.js";
import { OpenAIModel } from "../src/openai.js";

const { values: flags } = parseArgs({
  options: {
    nats: { type: "string", default: "nats://127.0.0.1:4222" },
    creds: { type: "string", default: process.env.HOLDOVER_NATS_CREDS ?? "" },
    "prompt-creds": { type: "string", default: "" },
    session: { type: "string", default: "" },
    prompt: { type: "string", default: "" },
    pool: { type: "boolean", default: false },
    "model-url": { type: "string", default: process.env.OPENAI_BASE_URL ?? "" },
    model: { type: "string", default: process.env.OPENAI_MODEL ?? "" },
    "ask-mode": { type: "string", default: "legacy" },
    "ask-timeout": { type: "string", default: "120" },
    "release-bound": { type: "string", default: "2s" },
    instance: { type: "string" },
    system: { type: "string", default: "" },
  },
});

/** Reads a Go duration of seconds or milliseconds ("1s", "1500ms"). */
function duration(s: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s)$/.exec(s);
  if (!m) throw new Error(`--release-bound ${JSON.stringify(s)} is not a duration such as 1s or 1500ms`);
  return Number(m[1]) * (m[2] === "s" ? 1000 : 1);
}

const line = (level: string) => (msg: string, fields: Record<string, unknown> = {}) => {
  const rest = Object.entries(fields).map(([k, v]) => ` ${k}=${v instanceof Error ? JSON.stringify(v.message) : typeof v === "string" ? v : JSON.stringify(v)}`);
  process.stderr.write(`level=${level} msg=${JSON.stringify(msg)}${rest.join("")}\n`);
};

const rt = await Runtime.connect({
  servers: flags.nats,
  ...(flags.creds ? { creds: flags.creds } : {}),
  releaseBoundMs: duration(flags["release-bound"]),
  warn: line("WARN"),
  info: line("INFO"),
  ...(flags.instance ? { instance: flags.instance } : {}),
});
// A permissions violation means the agent's credentials lack a right the
// SDK used: say so loudly, as the Go runtime does (ops.NATSConfig), so
// the suite can require there is none.
void (async () => {
  for await (const s of rt.conn.nc.status()) {
    if (s.type === "error") line("ERROR")("NATS refused an operation", { err: String(s.error) });
  }
})();
const model = new OpenAIModel({ baseURL: flags["model-url"], model: flags.model, ...(process.env.OPENAI_API_KEY ? { apiKey: process.env.OPENAI_API_KEY } : {}) });
const ask = askUserQuestionTool(rt, { mode: flags["ask-mode"] as "legacy" | "timed", defaultTimeout: Number(flags["ask-timeout"]) });
const childTools: Tool[] = [ask];
const tools: Tool[] = [ask, subagentTool(() => ({ model, tools: childTools, system: flags.system }))];

const stop = new AbortController();
/** The Sessions this process runs: each one's open, then its run. */
const running = new Map<string, { opened: Promise<Session>; run?: Promise<void> }>();

/**
 * Runs sid here unless this process runs it already, and returns once it is
 * registered and resumed. Two resume requests at once (a worker's and an
 * answer's) open it once: the second waits for the first, as Go's
 * Runtime.Start does, so one take-over is one new epoch.
 */
function start(sid: string): Promise<Session> {
  const had = running.get(sid);
  if (had) return had.opened;
  const entry: { opened: Promise<Session>; run?: Promise<void> } = { opened: rt.open(sid) };
  running.set(sid, entry);
  entry.opened.then(
    (s) => {
      entry.run = runAgent(rt, s, { model, tools, system: flags.system, signal: stop.signal })
        .catch((err: unknown) => line("WARN")("session stopped", { session: sid, err }))
        .finally(async () => {
          await rt.release(s);
          running.delete(sid);
        });
    },
    () => running.delete(sid),
  );
  return entry.opened;
}

if (flags.pool) await rt.joinPool(async (sid) => void (await start(sid)));
if (flags.session) {
  const empty = (await rt.log.last(flags.session)) === 0;
  await start(flags.session);
  const promptCreds = flags["prompt-creds"] || flags.creds;
  if (flags.prompt && empty) await steer({ servers: flags.nats, ...(promptCreds ? { creds: promptCreds } : {}) }, flags.session, flags.prompt, `prompt-${flags.session}`);
}

process.once("SIGTERM", () => {
  stop.abort();
  void (async () => {
    await Promise.all([...running.values()].map((e) => e.run));
    await rt.close();
    process.exit(0);
  })();
});
