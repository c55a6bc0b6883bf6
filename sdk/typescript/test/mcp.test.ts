// `holdover mcp` driven over stdio by the TypeScript MCP client
// (@modelcontextprotocol/sdk), the one most hosts embed, against the real
// question worker of `holdover dev`: the tools and their schemas, a
// question answered in time, pending at the timeout, a late answer handed
// over once by pending_answers and once by the next ask, bad arguments
// refused with their code, and a host killed mid-wait.

import { describe, expect, it, inject, onTestFinished } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { AskUserQuestion, Code, type Asker } from "../src/index.js";
import type { Answer } from "../src/wire.js";
import { answer, answeringClient, creds, eventually, natsURL, plainConn, runtime, sessionId } from "./helpers.js";

const questions = [{ id: "db", question: "Which database?", options: [{ label: "Postgres" }, { label: "SQLite" }] }];
const unused: Asker = {
  ask: () => Promise.reject(new Error("not called")),
  askTimed: () => Promise.reject(new Error("not called")),
};

/** The release bound of the host's leases: the shortest the system takes. */
const releaseBoundMs = 1000;

interface Host {
  client: Client;
  transport: StdioClientTransport;
  stderr: () => string;
}

/** A host session: `holdover mcp` on Session sid, as a host starts it, closed when the test ends. */
async function host(sid: string): Promise<Host> {
  const transport = new StdioClientTransport({
    command: inject("holdoverBin"),
    args: ["mcp", "--nats", natsURL(), "--creds", creds("agent"), "--session", sid, "--release-bound", `${releaseBoundMs}ms`],
    stderr: "pipe",
  });
  let log = "";
  transport.stderr!.on("data", (b: Buffer) => (log += b.toString()));
  const client = new Client({ name: "ts-test-host", version: "1" });
  await client.connect(transport);
  onTestFinished(() => client.close());
  return { client, transport, stderr: () => log };
}

interface Result {
  isError?: boolean;
  content: Array<{ type: string; text?: string }>;
  structuredContent?: Record<string, unknown>;
}

async function call(h: Host, name: string, args: Record<string, unknown>): Promise<Result> {
  return (await h.client.callTool({ name, arguments: args })) as Result;
}

const texts = (r: Result): string[] => r.content.map((c) => c.text ?? "");

/** The user/message events of sid's log that admit a late answer to callId. */
async function admissions(sid: string, callId: string): Promise<number> {
  const rt = await runtime();
  const log = await rt.log.read(sid);
  return log.filter((e) => e.type === "user/message" && (e.data as { message: { source: { callId?: string } } }).message.source.callId === callId).length;
}

/** Asks with a 1 s timeout and returns the pending result's call id, with the rest of the result. */
async function askPending(h: Host): Promise<{ callId: string; result: Result }> {
  const result = await call(h, "ask_user_question", { questions, timeout: 1 });
  expect(result.isError).toBeFalsy();
  const pending = JSON.parse(texts(result)[0]!) as { pending: boolean; callId: string };
  expect(pending.pending).toBe(true);
  return { callId: pending.callId, result };
}

const sqlite: Answer[] = [{ id: "db", selected: ["SQLite"] }];

describe("holdover mcp with the TypeScript MCP client", () => {
  it("lists ask_user_question with the runtimes' own timed schema, and pending_answers", async () => {
    const { client } = await host(sessionId());
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(["ask_user_question", "pending_answers"]);
    const own = new AskUserQuestion(unused, { mode: "timed" }).schema();
    expect(tools[0]!.description).toBe(own.description);
    expect(tools[0]!.inputSchema).toEqual(own.inputSchema);
    expect(tools[1]!.inputSchema).toEqual({ type: "object", properties: {}, additionalProperties: false });
  });

  it("returns the answers when a Client answers in time", async () => {
    const sid = sessionId();
    const h = await host(sid);
    const client = await answeringClient(await plainConn("gateway"), sid, sqlite);
    const result = await call(h, "ask_user_question", { questions, timeout: 30 });
    expect(texts(result)).toEqual(['{"answers":[{"id":"db","selected":["SQLite"]}]}']);
    expect(client.requests).toMatchObject([{ session: sid, questions, wait: { timed: true } }]);
  });

  it("returns pending at the timeout, and hands a late answer over once by pending_answers and once by the next ask", async () => {
    const sid = sessionId();
    const h = await host(sid);
    const first = await askPending(h);
    expect(JSON.parse(texts(first.result)[0]!)).toMatchObject({ message: expect.stringContaining("not a skipped answer") });
    expect(await answer(sid, first.callId, sqlite)).toMatchObject({ accepted: true });

    const late = await call(h, "pending_answers", {});
    expect(late.content).toHaveLength(1);
    expect(JSON.parse(texts(late)[0]!)).toMatchObject({ kind: "answer_to_pending_question", callId: first.callId, answers: sqlite });
    expect(texts(await call(h, "pending_answers", {}))).toEqual(["No late answers are waiting."]);
    expect(await admissions(sid, first.callId)).toBe(1);

    const second = await askPending(h);
    expect(await answer(sid, second.callId, [{ id: "db", selected: ["Postgres"] }])).toMatchObject({ accepted: true });
    const next = await askPending(h);
    const carried = texts(next.result);
    expect(carried).toHaveLength(2);
    expect(JSON.parse(carried[1]!)).toMatchObject({ kind: "answer_to_pending_question", callId: second.callId, answers: [{ id: "db", selected: ["Postgres"] }] });
    expect(texts(await call(h, "pending_answers", {}))).toEqual(["No late answers are waiting."]);
    expect(await admissions(sid, second.callId)).toBe(1);
  });

  it("refuses bad arguments as tool errors carrying Holdover's code", async () => {
    const h = await host(sessionId());
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ questions, timeout: 0 }, Code.BadTimeout],
      [{ questions, timeout: 1.5 }, Code.BadTimeout],
      [{ questions: [questions[0], questions[0]] }, Code.BadRequest],
      [{ questions: [] }, Code.EmptyQuestions],
    ];
    for (const [args, code] of cases) {
      const result = await call(h, "ask_user_question", args);
      expect(result.isError, JSON.stringify(args)).toBe(true);
      expect(texts(result)[0]).toMatch(new RegExp(`^${code}: `));
      expect(result.structuredContent).toMatchObject({ error: { code } });
    }
  });

  it("ends the wait of a host killed mid-wait within the release bound", async () => {
    const sid = sessionId();
    const h = await host(sid);
    const client = await answeringClient(await plainConn("gateway"), sid, null);
    const waiting = call(h, "ask_user_question", { questions, timeout: 600 }).catch((err: unknown) => err);
    await eventually(() => client.requests.length === 1, "the question reached the Client");
    const killed = Date.now();
    process.kill(h.transport.pid!, "SIGKILL");
    await eventually(() => client.cancels.includes("aborted"), `the worker ended the wait; the host logged:\n${h.stderr()}`, 10_000);
    const took = Date.now() - killed;
    // The release bound, and what the Go fault tests allow beyond it for
    // NATS to delete the lease and the worker to act on it (fgSlack).
    expect(took).toBeLessThan(releaseBoundMs + 3000);
    console.log(`host SIGKILLed mid-wait: the wait ended ${took} ms later (release bound ${releaseBoundMs} ms)`);
    expect(await waiting).toBeInstanceOf(Error); // the host's own call died with it
  });
});
