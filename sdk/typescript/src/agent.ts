// An agent's step loop over a Session, as the Go runtime runs it
// (runtime/agent.go): Turns while there is work, a step per model request,
// queued input admitted at each step's start, tool calls recorded before
// and after they run, and nothing recorded once the loop is cancelled, so
// a stopped agent leaves its running calls for the resume repair exactly
// as a crash would. Use it as it is, or as the model for a loop of your own
// over Session's primitives (README.md).

import { Code, HoldoverError, codeOf, wire } from "./errors.js";
import type { ToolSchema } from "./generated/events.js";
import { AskUserQuestion, type AskToolConfig, type ToolOutput } from "./asktool.js";
import type { Runtime } from "./runtime.js";
import { Session, newID, text, withTurn } from "./session.js";
import { fixedSchema } from "./sessionlog.js";
import type { ChatMessage, ModelToolCall } from "./state.js";

/** One model request: the system prompt, the conversation so far and the tools on offer. */
export interface ModelRequest {
  system?: string;
  messages: ChatMessage[];
  tools: ToolSchema[];
}

/** The model's answer: text to show, tool calls to make, or both. */
export interface ModelResponse {
  text?: string;
  toolCalls?: ModelToolCall[];
}

/** A language model. It keeps no per-Session state: everything it needs is in the request. */
export interface Model {
  /** Identifies the model in request/header events. */
  readonly name: string;
  complete(req: ModelRequest, signal?: AbortSignal): Promise<ModelResponse>;
}

/** One tool call as the loop hands it to a tool. */
export interface ToolCallContext {
  runtime: Runtime;
  session: Session;
  turn: string;
  callId: string;
  name: string;
  arguments: unknown;
}

/** A tool the model can call. Failures come back as output with isError, never as a throw. */
export interface Tool {
  readonly schema: ToolSchema;
  call(ctx: ToolCallContext, signal: AbortSignal): Promise<ToolOutput>;
}

/** ask_user_question against the runtime's question service (M1–M9). */
export function askUserQuestionTool(rt: Runtime, cfg: AskToolConfig = {}): Tool {
  const tool = new AskUserQuestion(rt.caller, cfg);
  return {
    schema: fixedSchema(tool.schema()),
    call: (ctx, signal) =>
      tool.call({ session: ctx.session.id, callId: ctx.callId, agent: ctx.session.ref, arguments: ctx.arguments }, signal),
  };
}

export interface AgentOptions {
  model: Model;
  tools: Tool[];
  system?: string;
  /** Bounds the steps of one Turn; default 200. */
  maxSteps?: number;
  /** Ends the loop: the Turn is cancelled and its running question aborted (W5). */
  signal?: AbortSignal;
}

class Stopped extends Error {}

/**
 * Serves the Session until the signal aborts: Turns while there is an open
 * Turn or queued input, waiting for input in between. A writer that
 * appended meanwhile makes it rebuild from the log and go on while it is
 * still the live root; one that is not stops with CALLER_NOT_LIVE. It
 * returns when the signal aborts and throws what stops it otherwise; the
 * caller releases the Session either way (Runtime.release).
 */
export async function runAgent(rt: Runtime, session: Session, opts: AgentOptions): Promise<void> {
  const loop = new Loop(rt, session, opts);
  for (;;) {
    try {
      await loop.run();
      return;
    } catch (err) {
      if (err instanceof Stopped || opts.signal?.aborted) return;
      if (codeOf(err) !== Code.Conflict) throw err;
      await session.checkLive();
      rt.warn("another writer appended to the Session log; rebuilding from it", { session: session.id });
      await session.rebuild();
    }
  }
}

/** Runs one Turn on a child's Session with task as its user message, and returns its final text. */
export async function runTask(rt: Runtime, session: Session, task: string, opts: AgentOptions): Promise<string> {
  const loop = new Loop(rt, session, opts);
  await session.beginTurn();
  await session.record("user/message", withTurn(session.state.turn, {
    message: { id: newID("msg"), role: "user", content: text(task), source: { kind: "user" } },
  }));
  await loop.turn();
  for (let i = session.state.history.length - 1; i >= 0; i--) {
    const m = session.state.history[i]!;
    if (m.role === "assistant" && m.text !== "") return m.text;
  }
  return "";
}

/** subagent: hands a task to a child agent that cannot ask the user (M9), as the Go runtime's tool does. */
export function subagentTool(childOptions: () => AgentOptions): Tool {
  return {
    schema: fixedSchema({
      name: "subagent",
      description:
        "Hand a self-contained task to a child agent and get its final message back. " +
        "The child cannot ask the user; it reports any open question in its final message, for you to ask.",
      inputSchema: {
        type: "object",
        properties: { task: { type: "string", description: "What the child should do, with everything it needs to know." } },
        required: ["task"],
        additionalProperties: false,
      },
    }),
    async call(ctx, signal) {
      const args = ctx.arguments as { task?: unknown } | null;
      if (ctx.session.child) return failure(new HoldoverError(Code.BadRequest, "a child agent cannot start another"));
      if (!args || typeof args !== "object" || typeof args.task !== "string" || args.task === "" || Object.keys(args).length !== 1) {
        return failure(new HoldoverError(Code.BadRequest, `subagent takes {"task": "…"}`));
      }
      let child: Session | undefined;
      try {
        child = await ctx.runtime.openChild(ctx.session, ctx.callId);
        const final = await runTask(ctx.runtime, child, args.task, { ...childOptions(), signal });
        return { text: final || "The child agent finished without a final message." };
      } catch (err) {
        return failure(err);
      } finally {
        if (child) await ctx.runtime.release(child);
      }
    },
  };
}

/** A tool error the model reads: "CODE: message". */
export function failure(err: unknown): ToolOutput {
  const w = wire(err);
  return { text: `${w.code}: ${w.message}`, isError: true, code: w.code };
}

class Loop {
  private readonly maxSteps: number;
  private readonly signal: AbortSignal;
  private readonly tools: Map<string, Tool>;

  constructor(
    private readonly rt: Runtime,
    private readonly s: Session,
    private readonly opts: AgentOptions,
  ) {
    this.maxSteps = opts.maxSteps ?? 200;
    this.signal = opts.signal ?? new AbortController().signal;
    this.tools = new Map(opts.tools.map((t) => [t.schema.name, t]));
  }

  /** Runs Turns while there is work, and waits for input in between. */
  async run(): Promise<void> {
    for (;;) {
      this.live();
      if (this.s.failed) throw this.s.failed;
      if (this.s.state.turn === "" && this.s.state.queue.length === 0) {
        await this.s.waitForInput(this.signal);
        continue;
      }
      this.live();
      await this.s.beginTurn();
      await this.turn();
    }
  }

  /** Runs steps until the open Turn ends: the model answers without tool calls and no input waits, or the step limit. */
  async turn(): Promise<void> {
    for (;;) {
      const st = this.s.state;
      if (st.turn === "") return;
      this.live();
      if (!st.needsModel() && st.queue.length === 0) return this.s.endTurn("done");
      if (st.step >= this.maxSteps) return this.s.endTurn(`step limit of ${this.maxSteps} reached`);
      await this.step();
    }
  }

  private async step(): Promise<void> {
    await this.s.checkLive(); // a stale instance must not start another model request (M9)
    this.live();
    const tools = [...this.tools.values()].map((t) => t.schema);
    await this.s.beginStep(this.opts.model.name, tools);
    const turn = this.s.state.turn;
    const req: ModelRequest = { messages: structuredClone(this.s.state.history), tools };
    if (this.opts.system) req.system = this.opts.system;
    let resp: ModelResponse;
    try {
      resp = await this.opts.model.complete(req, this.signal);
    } catch (err) {
      this.live();
      this.rt.warn("the model failed; ending the Turn", { session: this.s.id, turn, err });
      return this.s.endTurn(`model failed: ${err instanceof Error ? err.message : String(err)}`);
    }
    this.live();
    if (resp.text) await this.s.record("assistant/message", withTurn(turn, { id: newID("msg"), content: text(resp.text) }));
    for (const tc of resp.toolCalls ?? []) await this.call(turn, tc);
    this.live();
    await this.s.endStep();
  }

  private async call(turn: string, tc: ModelToolCall): Promise<void> {
    const callId = tc.id || newID("call");
    this.live();
    await this.s.record("tool/call", withTurn(turn, { callId, name: tc.name, arguments: tc.arguments }));
    const tool = this.tools.get(tc.name);
    let out: ToolOutput;
    if (!tool) {
      out = failure(new HoldoverError(Code.BadRequest, `there is no tool named ${JSON.stringify(tc.name)}; the tools are: ${[...this.tools.keys()].join(", ")}`));
    } else {
      try {
        out = await tool.call({ runtime: this.rt, session: this.s, turn, callId, name: tc.name, arguments: tc.arguments }, this.signal);
      } catch (err) {
        out = failure(new HoldoverError(Code.Internal, `tool ${tc.name} failed: ${err instanceof Error ? err.message : String(err)}`));
      }
    }
    this.live();
    const result = { callId, name: tc.name, content: text(out.text) };
    await this.s.record("tool/result", withTurn(turn, out.isError ? { ...result, isError: true, error: { code: out.code || Code.Internal } } : result));
  }

  /** Once the loop is cancelled nothing more is recorded. */
  private live(): void {
    if (this.signal.aborted) throw new Stopped();
  }
}
