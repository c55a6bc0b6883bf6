// A TypeScript agent on Holdover, driving any OpenAI-compatible Chat
// Completions model (OpenAI, DeepSeek, vLLM, Ollama): it serves one Session
// as its live root and the resume pool, asks timed questions, keeps
// working when one goes pending, and takes the late answer at its next
// step. Against `holdover dev` (NATS on 127.0.0.1:4222, credentials in
// .holdover/auth/tenants/default/: the agent's to run, an admin's to queue
// the prompt, since an agent may not write an inbox):
//
//   OPENAI_BASE_URL=https://api.deepseek.com/v1 OPENAI_API_KEY=… OPENAI_MODEL=deepseek-chat \
//     npm run example -- --creds ../../.holdover/auth/tenants/default/agent.creds \
//       --prompt-creds ../../.holdover/auth/tenants/default/admin.creds \
//       --session ts-demo --prompt "Plan a new service; ask me what you need."

import { parseArgs } from "node:util";
import { pathToFileURL } from "node:url";
import { Runtime, askUserQuestionTool, runAgent, steer, type Model, type Session } from "@holdover/agent";
import { OpenAIModel, openAIFromEnv } from "@holdover/agent/openai";

export interface ExampleOptions {
  nats: string;
  /** The agent role's credentials file; none on a server without authentication. */
  creds?: string;
  /** Credentials that may queue the prompt (an admin's); default creds. */
  promptCreds?: string;
  session: string;
  prompt: string;
  model: Model;
  /** The timed question's default wait in seconds. */
  askTimeout?: number;
  signal: AbortSignal;
  /** Called once the Session is open and the prompt queued. */
  ready?: (rt: Runtime, s: Session) => void;
}

const system =
  "You are a careful engineering agent. When you need a decision from the user, call ask_user_question. " +
  "If the result is pending, keep working on what does not depend on the answer, and use the answer when it arrives.";

/** Runs the agent until the signal aborts, then releases the Session and closes. */
export async function runExample(opts: ExampleOptions): Promise<void> {
  const rt = await Runtime.connect({ servers: opts.nats, ...credsOf(opts.creds), info: (msg, f) => console.error(msg, f ?? "") });
  const tools = [askUserQuestionTool(rt, { mode: "timed", defaultTimeout: opts.askTimeout ?? 120 })];
  const sessions = new Set<Promise<void>>();
  // Each Session opened once, however many resume requests come for it.
  const opened = new Map<string, Promise<Session>>();
  const serve = (sid: string): Promise<Session> => {
    let s = opened.get(sid);
    if (!s) {
      s = rt.open(sid);
      opened.set(sid, s);
      s.then(
        (session) => {
          const run = runAgent(rt, session, { model: opts.model, tools, system, signal: opts.signal })
            .catch((err: unknown) => console.error(`session ${sid} stopped:`, err))
            .finally(() => rt.release(session).finally(() => opened.delete(sid)));
          sessions.add(run);
        },
        () => opened.delete(sid),
      );
    }
    return s;
  };
  // A late answer for a Session nobody runs any more resumes it here (D7).
  const leave = await rt.joinPool(async (sid) => void (await serve(sid)));
  const s = await serve(opts.session);
  if (s.last === 0) await steer({ servers: opts.nats, ...credsOf(opts.promptCreds ?? opts.creds) }, opts.session, opts.prompt, `prompt-${opts.session}`);
  opts.ready?.(rt, s);
  await new Promise<void>((resolve) => opts.signal.addEventListener("abort", () => resolve(), { once: true }));
  leave();
  await Promise.all(sessions);
  await rt.close();
}

function credsOf(file: string | undefined): { creds?: string } {
  return file ? { creds: file } : {};
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({
    options: {
      nats: { type: "string", default: process.env.HOLDOVER_NATS ?? "nats://127.0.0.1:4222" },
      creds: { type: "string", default: process.env.HOLDOVER_NATS_CREDS ?? "" },
      "prompt-creds": { type: "string", default: process.env.HOLDOVER_PROMPT_CREDS ?? "" },
      session: { type: "string", default: "ts-demo" },
      prompt: { type: "string", default: "Plan a new web service. Ask me which database to use, then go on with the rest." },
      "ask-timeout": { type: "string", default: "120" },
    },
  });
  const env = openAIFromEnv();
  const stop = new AbortController();
  process.once("SIGINT", () => stop.abort());
  process.once("SIGTERM", () => stop.abort());
  await runExample({
    nats: values.nats,
    ...(values.creds ? { creds: values.creds } : {}),
    ...(values["prompt-creds"] ? { promptCreds: values["prompt-creds"] } : {}),
    session: values.session,
    prompt: values.prompt,
    askTimeout: Number(values["ask-timeout"]),
    model: new OpenAIModel({ baseURL: env.baseURL ?? "", model: env.model ?? "", ...(env.apiKey ? { apiKey: env.apiKey } : {}) }),
    signal: stop.signal,
  });
}
