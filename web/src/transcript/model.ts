// The transcript of one Session as the page lays it out: Turns, the
// process groups inside them, and the rows inside those, built from the
// Session's recorded events as a pure function.
//
// Ordinary grouping (ui-chat): inside a Turn, the consecutive assistant and
// tool activity of one step folds into a process group. An ordinary user
// message that opens the Turn is its trigger and stays visible before the
// Turn's disclosure control; one admitted mid-Turn stands between groups;
// the final assistant message of an ended Turn stands after them.
//
// A late reply (G1–G3) is recognised by its message source alone and is
// process content: it joins the group of the step that admitted it, folds
// with its Turn, and never triggers a Turn. So when a reply opens a Turn,
// the Turn's disclosure control still comes first, before the group that
// holds the reply. It renders exactly once: as a reply row, never also as
// a user row — including a reply recorded outside any Turn.
//
// Inbox events (spliced, claimed, discarded) are not rows: a queued reply
// shows on its question's tool row (P5), and an admitted one as its
// user/message.

import type { Message, Question, SessionEvent, ToolResult, View } from "../wire";
import { joinText, readQuestions } from "../wire";
import { isQuestionReply } from "../questions/reply";
import { isRecord } from "../json";

/** The name of the question tool, whose rows are question tool rows (P5). */
export const questionTool = "ask_user_question";

export type Row =
  | { kind: "user"; key: string; seq: number; text: string }
  | { kind: "reply"; key: string; seq: number; message: Message }
  | { kind: "assistant"; key: string; seq: number; text: string }
  | ToolRow;

export interface ToolRow {
  kind: "tool";
  key: string;
  seq: number;
  callId: string;
  name: string;
  arguments: unknown;
  /** The recorded result, once there is one. */
  result: ToolResult | undefined;
  /** Set for a call made from inside run_code (a PTC dispatch, D4). */
  parentCallId: string | undefined;
  /** The questions of an ask_user_question call's arguments. */
  questions: Question[] | undefined;
  /** The call's Turn ended (so a missing result means it was interrupted). */
  turnEnded: boolean;
}

/** The consecutive process activity of one step. */
export interface ProcessGroup {
  kind: "group";
  key: string;
  step: number;
  rows: Row[];
  /** Whether it starts unfolded: its Turn is running, or a question in it needs the user. */
  expanded: boolean;
  summary: string;
}

export interface Turn {
  kind: "turn";
  key: string;
  turn: string;
  seq: number;
  /** The ordinary user message that opened the Turn; shown before the disclosure control. */
  trigger: Row | undefined;
  /** Groups and the rows between them (mid-Turn user messages, the final answer). */
  content: (ProcessGroup | Row)[];
  ended: boolean;
  reason: string | undefined;
  steps: number;
  toolCalls: number;
  /** Whether it starts unfolded: the last or a running Turn, or one with a question that needs the user. */
  expanded: boolean;
  summary: string;
}

/** A transcript entry: a Turn, or a row recorded outside any Turn (historical input). */
export type Block = Turn | Row;

interface TurnBuilder {
  block: Turn;
  step: number;
  entries: { row: Row; step: number }[];
}

/**
 * Lays out events (any order, repeats allowed) with the projection view,
 * which decides what needs the user's attention and so starts unfolded.
 */
export function buildTranscript(events: readonly SessionEvent[], view: View | undefined): Block[] {
  const blocks: Block[] = [];
  const turns = new Map<string, TurnBuilder>();
  const tools = new Map<string, ToolRow>();
  const attention = new Set((view?.active ?? []).map((c) => c.callId));

  const place = (turnId: unknown, row: Row) => {
    const t = typeof turnId === "string" ? turns.get(turnId) : undefined;
    if (t) t.entries.push({ row, step: t.step });
    else blocks.push(row);
  };

  for (const e of ordered(events)) {
    const d = isRecord(e.data) ? e.data : {};
    switch (e.type) {
      case "turn/start": {
        if (typeof d.turn !== "string" || turns.has(d.turn)) break;
        const block: Turn = {
          kind: "turn",
          key: `turn:${d.turn}`,
          turn: d.turn,
          seq: e.seq,
          trigger: undefined,
          content: [],
          ended: false,
          reason: undefined,
          steps: 0,
          toolCalls: 0,
          expanded: false,
          summary: "",
        };
        turns.set(d.turn, { block, step: 1, entries: [] });
        blocks.push(block);
        break;
      }
      case "turn/end": {
        const t = typeof d.turn === "string" ? turns.get(d.turn) : undefined;
        if (t) {
          t.block.ended = true;
          t.block.reason = typeof d.reason === "string" && d.reason !== "" ? d.reason : undefined;
        }
        break;
      }
      case "step/end": {
        const t = typeof d.turn === "string" ? turns.get(d.turn) : undefined;
        if (t) t.step = (typeof d.step === "number" ? d.step : t.step) + 1;
        break;
      }
      case "user/message": {
        const message = readMessage(d.message);
        if (!message) break;
        const key = `msg:${message.id || e.seq}`;
        place(d.turn, isQuestionReply(message) ? { kind: "reply", key, seq: e.seq, message } : { kind: "user", key, seq: e.seq, text: joinText(message.content) });
        break;
      }
      case "assistant/message":
        place(d.turn, { kind: "assistant", key: `msg:${typeof d.id === "string" ? d.id : e.seq}`, seq: e.seq, text: joinText(parts(d.content)) });
        break;
      case "tool/call":
      case "tool/ptc-dispatch": {
        if (typeof d.callId !== "string" || typeof d.name !== "string") break;
        const row: ToolRow = {
          kind: "tool",
          key: `call:${d.callId}:${e.seq}`,
          seq: e.seq,
          callId: d.callId,
          name: d.name,
          arguments: d.arguments,
          result: e.type === "tool/ptc-dispatch" ? resultOf(d) : undefined,
          parentCallId: typeof d.parentCallId === "string" ? d.parentCallId : undefined,
          questions: d.name === questionTool ? questionsOf(d.arguments) : undefined,
          turnEnded: false,
        };
        tools.set(d.callId, row);
        place(d.turn, row);
        break;
      }
      case "tool/result": {
        const row = typeof d.callId === "string" ? tools.get(d.callId) : undefined;
        if (row) row.result = resultOf(d);
        break;
      }
    }
  }

  const lastTurn = [...turns.values()].at(-1);
  for (const t of turns.values()) finishTurn(t, t === lastTurn, attention);
  return blocks;
}

function finishTurn(t: TurnBuilder, last: boolean, attention: ReadonlySet<string>): void {
  const turn = t.block;
  const entries = [...t.entries];
  if (entries[0]?.row.kind === "user") turn.trigger = entries.shift()?.row;
  const final = turn.ended && entries.at(-1)?.row.kind === "assistant" ? entries.pop()?.row : undefined;

  let group: ProcessGroup | undefined;
  for (const { row, step } of entries) {
    if (row.kind === "tool") row.turnEnded = turn.ended;
    if (row.kind === "user") {
      turn.content.push(row);
      group = undefined;
      continue;
    }
    if (!group || group.step !== step) {
      group = { kind: "group", key: `${turn.key}:step:${step}:${row.seq}`, step, rows: [], expanded: false, summary: "" };
      turn.content.push(group);
    }
    group.rows.push(row);
  }
  if (final) turn.content.push(final);

  let needsUser = false;
  for (const part of turn.content) {
    if (part.kind !== "group") continue;
    const asks = part.rows.some((r) => r.kind === "tool" && attention.has(r.callId));
    needsUser ||= asks;
    part.expanded = !turn.ended || asks;
    part.summary = groupSummary(part);
  }
  turn.steps = Math.max(t.step - 1, ...t.entries.map((e) => e.step));
  turn.toolCalls = t.entries.filter((e) => e.row.kind === "tool").length;
  turn.expanded = last || !turn.ended || needsUser;
  turn.summary = turnSummary(turn, final);
}

/** "Step 2 · read_file, ask_user_question · reply to earlier questions" */
function groupSummary(group: ProcessGroup): string {
  const names = [...new Set(group.rows.flatMap((r) => (r.kind === "tool" ? [r.name] : [])))];
  const parts = [`Step ${group.step}`];
  if (names.length > 0) parts.push(names.join(", "));
  else if (group.rows.some((r) => r.kind === "assistant")) parts.push("message");
  if (group.rows.some((r) => r.kind === "reply")) parts.push("reply to earlier questions");
  return parts.join(" · ");
}

/** "Agent turn · 3 steps · 2 tool calls · running" */
function turnSummary(turn: Turn, final: Row | undefined): string {
  const parts = ["Agent turn"];
  if (turn.steps > 0) parts.push(turn.steps === 1 ? "1 step" : `${turn.steps} steps`);
  if (turn.toolCalls > 0) parts.push(turn.toolCalls === 1 ? "1 tool call" : `${turn.toolCalls} tool calls`);
  if (!turn.ended) parts.push("running");
  else if (turn.reason && turn.reason !== "done") parts.push(turn.reason);
  else if (final?.kind === "assistant") parts.push(firstLine(final.text));
  return parts.join(" · ");
}

function firstLine(text: string): string {
  const line = text.trim().split("\n")[0] ?? "";
  return line.length > 80 ? `${line.slice(0, 79)}…` : line;
}

/** Events by seq, each seq once. */
function ordered(events: readonly SessionEvent[]): SessionEvent[] {
  const bySeq = new Map<number, SessionEvent>();
  for (const e of events) if (!bySeq.has(e.seq)) bySeq.set(e.seq, e);
  return [...bySeq.values()].sort((a, b) => a.seq - b.seq);
}

function readMessage(x: unknown): Message | undefined {
  if (!isRecord(x)) return undefined;
  const source = isRecord(x.source) ? x.source : {};
  const out: Message = {
    id: typeof x.id === "string" ? x.id : "",
    role: typeof x.role === "string" ? x.role : "user",
    content: parts(x.content),
    source: { kind: typeof source.kind === "string" ? source.kind : "" },
  };
  if (typeof source.callId === "string") out.source.callId = source.callId;
  if (typeof source.outcome === "string") out.source.outcome = source.outcome;
  if (typeof source.user === "string" && source.user !== "") out.source.user = source.user;
  return out;
}

function parts(x: unknown): { type: string; text: string }[] {
  if (!Array.isArray(x)) return [];
  return x.flatMap((p) => (isRecord(p) && typeof p.text === "string" ? [{ type: typeof p.type === "string" ? p.type : "text", text: p.text }] : []));
}

function resultOf(d: Record<string, unknown>): ToolResult {
  const r: ToolResult = { callId: typeof d.callId === "string" ? d.callId : "", content: parts(d.content) };
  if (typeof d.name === "string") r.name = d.name;
  if (d.isError === true) r.isError = true;
  if (isRecord(d.error)) {
    r.error = {};
    if (typeof d.error.name === "string") r.error.name = d.error.name;
    if (typeof d.error.code === "string") r.error.code = d.error.code;
  }
  return r;
}

function questionsOf(args: unknown): Question[] | undefined {
  let value = args;
  if (typeof value === "string") {
    try {
      value = JSON.parse(value);
    } catch {
      return undefined;
    }
  }
  return isRecord(value) ? readQuestions(value.questions) : undefined;
}
