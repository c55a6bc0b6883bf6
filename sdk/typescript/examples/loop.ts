import { Runtime, askUserQuestionTool, newID, steer, text, withTurn } from "@holdover/agent";
import { OpenAIModel } from "@holdover/agent/openai";

const nats = (creds = process.env.HOLDOVER_NATS_CREDS) => ({ servers: process.env.HOLDOVER_NATS ?? "nats://127.0.0.1:4222", ...(creds ? { creds } : {}) });
const rt = await Runtime.connect(nats()); // the agent role's credentials
const model = new OpenAIModel({ baseURL: process.env.OPENAI_BASE_URL!, apiKey: process.env.OPENAI_API_KEY, model: process.env.OPENAI_MODEL! });
const ask = askUserQuestionTool(rt, { mode: "timed", defaultTimeout: 30 });
const sid = process.env.SESSION ?? "ts-loop";
const session = await rt.open(sid); // the live root: a new epoch; the log read, interrupted calls repaired
if (session.last === 0) await steer(nats(process.env.HOLDOVER_PROMPT_CREDS), sid, "Set up a new service. Ask me which database to use.", `prompt-${sid}`); // an admin's
const stop = new AbortController(); // Ctrl-C: the running question is aborted, the Session released
process.once("SIGINT", () => stop.abort());

while (!stop.signal.aborted) {
  await session.waitForInput(stop.signal); // a prompt, or a late answer to a pending question
  if (stop.signal.aborted) break;
  const turn = await session.beginTurn();
  for (let step = 0; step < 20; step++) {
    await session.checkLive(); // CALLER_NOT_LIVE once another instance took the Session over
    await session.beginStep(model.name, [ask.schema]); // admits queued messages, records request/header
    const resp = await model.complete({ messages: session.state.history, tools: [ask.schema] }, stop.signal);
    if (resp.text) await session.record("assistant/message", withTurn(turn, { id: newID("msg"), content: text(resp.text) }));
    for (const c of resp.toolCalls ?? []) {
      await session.record("tool/call", withTurn(turn, { callId: c.id, name: c.name, arguments: c.arguments }));
      const out = await ask.call({ runtime: rt, session, turn, callId: c.id, name: c.name, arguments: c.arguments }, stop.signal);
      const error = out.isError ? { isError: true, error: { code: out.code! } } : {};
      await session.record("tool/result", withTurn(turn, { callId: c.id, name: c.name, content: text(out.text), ...error }));
    }
    await session.endStep();
    if (!resp.toolCalls?.length && session.state.queue.length === 0) break; // answered, and nothing new came in
  }
  await session.endTurn("done"); // discards what it did not admit: the user can answer again
}
await rt.release(session);
await rt.close();
