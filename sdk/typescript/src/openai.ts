// A model reached over the OpenAI Chat Completions API with tool calling,
// which OpenAI, DeepSeek, vLLM and Ollama all serve: only the base URL, the
// key and the model name differ. The same translation as the Go runtime's
// runtime/model/openai, so both runtimes send a server the same requests.

import { Code, HoldoverError } from "./errors.js";
import type { Model, ModelRequest, ModelResponse } from "./agent.js";

export interface OpenAIConfig {
  /** The API root, e.g. https://api.openai.com/v1; the model posts to baseURL + "/chat/completions". */
  baseURL: string;
  /** Sent as a bearer token when set; local servers need none. */
  apiKey?: string;
  /** The model name the server knows. */
  model: string;
  /** Bounds one request; default two minutes. */
  timeoutMs?: number;
}

/** Reads OPENAI_BASE_URL, OPENAI_API_KEY and OPENAI_MODEL, the names these servers' own tools use. */
export function openAIFromEnv(env: NodeJS.ProcessEnv = process.env): Partial<OpenAIConfig> {
  const cfg: Partial<OpenAIConfig> = {};
  if (env.OPENAI_BASE_URL) cfg.baseURL = env.OPENAI_BASE_URL;
  if (env.OPENAI_API_KEY) cfg.apiKey = env.OPENAI_API_KEY;
  if (env.OPENAI_MODEL) cfg.model = env.OPENAI_MODEL;
  return cfg;
}

interface ChatMessage {
  role: string;
  content: string | null;
  tool_calls?: Array<{ id: string; type: "function"; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
}

export class OpenAIModel implements Model {
  readonly name: string;
  private readonly endpoint: string;

  constructor(private readonly cfg: OpenAIConfig) {
    if (!cfg.baseURL) throw new HoldoverError(Code.BadRequest, "the model needs a base URL (OPENAI_BASE_URL), such as https://api.openai.com/v1");
    if (!cfg.model) throw new HoldoverError(Code.BadRequest, "the model needs a model name (OPENAI_MODEL)");
    this.name = cfg.model;
    this.endpoint = cfg.baseURL.replace(/\/+$/, "") + "/chat/completions";
  }

  async complete(req: ModelRequest, signal?: AbortSignal): Promise<ModelResponse> {
    const timeout = AbortSignal.timeout(this.cfg.timeoutMs ?? 120_000);
    const headers: Record<string, string> = { "Content-Type": "application/json" };
    if (this.cfg.apiKey) headers.Authorization = `Bearer ${this.cfg.apiKey}`;
    const resp = await fetch(this.endpoint, {
      method: "POST",
      headers,
      body: JSON.stringify(encodeRequest(this.name, req)),
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    });
    const body = await resp.text();
    if (resp.status !== 200) throw statusError(resp.status, body);
    return decodeResponse(body);
  }
}

export function encodeRequest(model: string, req: ModelRequest): { model: string; messages: ChatMessage[]; tools?: unknown[] } {
  const messages: ChatMessage[] = [];
  if (req.system) messages.push({ role: "system", content: req.system });
  for (const m of req.messages) {
    if (m.role === "assistant") {
      const calls = m.toolCalls ?? [];
      if (m.text === "" && calls.length === 0) continue; // an empty answer carries nothing, and some servers refuse it
      const out: ChatMessage = { role: "assistant", content: m.text === "" ? null : m.text };
      if (calls.length > 0) {
        out.tool_calls = calls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: JSON.stringify(c.arguments) } }));
      }
      messages.push(out);
    } else if (m.role === "tool") {
      messages.push({ role: "tool", content: m.text, tool_call_id: m.toolCallId ?? "" });
    } else {
      messages.push({ role: m.role, content: m.text });
    }
  }
  const out: { model: string; messages: ChatMessage[]; tools?: unknown[] } = { model, messages };
  if (req.tools.length > 0) {
    out.tools = req.tools.map((t) => {
      const fn: Record<string, unknown> = { name: t.name };
      if (t.description) fn.description = t.description;
      fn.parameters = t.inputSchema ?? { type: "object", properties: {} };
      return { type: "function", function: fn };
    });
  }
  return out;
}

export function decodeResponse(body: string): ModelResponse {
  let resp: { choices?: Array<{ message?: ChatMessage }> };
  try {
    resp = JSON.parse(body) as typeof resp;
  } catch (err) {
    throw new HoldoverError(Code.Internal, `the chat response is not valid JSON: ${(err as Error).message}`);
  }
  const msg = resp.choices?.[0]?.message;
  if (!msg) throw new HoldoverError(Code.Internal, "the chat response has no choices");
  const out: ModelResponse = {};
  if (typeof msg.content === "string" && msg.content !== "") out.text = msg.content;
  if (msg.tool_calls?.length) {
    out.toolCalls = msg.tool_calls.map((c) => ({ id: c.id, name: c.function.name, arguments: parseArguments(c.function.arguments) }));
  }
  return out;
}

/** The API's argument string as JSON; text that is not JSON is kept as a string, for the tool to refuse. */
function parseArguments(s: string): unknown {
  if (s.trim() === "") return {};
  try {
    return JSON.parse(s);
  } catch {
    return s;
  }
}

function statusError(status: number, body: string): HoldoverError {
  let msg = body.trim();
  try {
    const e = JSON.parse(body) as { error?: { message?: string } };
    if (e.error?.message) msg = e.error.message;
  } catch {
    // the body as it is
  }
  if (msg.length > 500) msg = msg.slice(0, 500) + "…";
  const code = status >= 400 && status < 500 && status !== 429 ? Code.BadRequest : Code.Internal;
  return new HoldoverError(code, `the model server answered ${status}: ${msg}`);
}
