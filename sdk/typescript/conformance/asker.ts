// The latency benchmark's TypeScript asker (integration,
// BenchmarkConformanceAskLatency): the SDK's askTimed, one call per line
// "ask <call id>" on stdin, each reported as "done <call id> <sent>
// <result>" in CLOCK_MONOTONIC nanoseconds (process.hrtime), the clock the
// benchmark and the Go asker (faultproc asker) read too.
//
//   node dist/conformance/asker.js --nats URL [--creds agent.creds] --session S --instance I --epoch E

import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { Runtime } from "../src/index.js";

const { values: flags } = parseArgs({
  options: {
    nats: { type: "string", default: "nats://127.0.0.1:4222" },
    creds: { type: "string", default: "" },
    session: { type: "string", default: "" },
    instance: { type: "string", default: "" },
    epoch: { type: "string", default: "0" },
    bound: { type: "string", default: "1000" },
  },
});

const rt = await Runtime.connect({ servers: flags.nats, ...(flags.creds ? { creds: flags.creds } : {}), releaseBoundMs: Number(flags.bound) });
const agent = { instance: flags.instance, epoch: Number(flags.epoch) };
const questions = [{ id: "deploy", question: "Deploy to production now?", options: [{ label: "yes" }, { label: "no" }] }];
process.stdout.write("ready\n");
for await (const line of createInterface({ input: process.stdin })) {
  const id = line.startsWith("ask ") ? line.slice(4) : "";
  if (id === "") throw new Error(`asker reads "ask <call id>" lines, not ${JSON.stringify(line)}`);
  const sent = process.hrtime.bigint();
  const out = await rt.caller.askTimed({ session: flags.session, callId: id, agent, questions, timeoutMs: 600_000 });
  const done = process.hrtime.bigint();
  if (out.answers?.length !== 1) throw new Error(`ask ${id}: ${JSON.stringify(out)}`);
  process.stdout.write(`done ${id} ${sent} ${done}\n`);
}
await rt.close();
