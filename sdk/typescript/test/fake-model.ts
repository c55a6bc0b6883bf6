// A local OpenAI-compatible Chat Completions server for the examples'
// tests: each request goes to a script that reads the conversation.

import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { onTestFinished } from "vitest";

export interface ChatRequest {
  model: string;
  messages: Array<{ role: string; content: string | null; tool_call_id?: string }>;
  tools?: Array<{ function: { name: string } }>;
}

export type Script = (req: ChatRequest) => { text?: string; calls?: Array<{ id: string; name: string; args: unknown }> };

export async function fakeModel(script: Script): Promise<{ url: string; requests: ChatRequest[] }> {
  const requests: ChatRequest[] = [];
  const server: Server = createServer((req, res) => {
    let body = "";
    req.on("data", (b: Buffer) => (body += b.toString()));
    req.on("end", () => {
      const chat = JSON.parse(body) as ChatRequest;
      requests.push(chat);
      const out = script(chat);
      const message: Record<string, unknown> = { role: "assistant", content: out.text ?? null };
      if (out.calls?.length) {
        message.tool_calls = out.calls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: JSON.stringify(c.args) } }));
      }
      res.setHeader("Content-Type", "application/json");
      res.end(JSON.stringify({ choices: [{ index: 0, message }] }));
    });
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  onTestFinished(() => new Promise<void>((ok) => server.close(() => ok())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, requests };
}

/** The script both examples are tested with: ask (1 s), go on when pending, thank for the late answer. */
export const askThenGoOn: Script = (req) => {
  const last = req.messages[req.messages.length - 1]!;
  if (last.role === "user" && last.content?.includes("answer_to_pending_question")) return { text: "Thanks, using SQLite then." };
  if (last.role === "tool") return { text: "The question is pending; I went on with the rest." };
  return { calls: [{ id: "call_1", name: "ask_user_question", args: { questions: [{ id: "db", question: "Which database?", options: [{ label: "Postgres" }, { label: "SQLite" }] }], timeout: 1 } }] };
};
