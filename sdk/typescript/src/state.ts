// What an agent knows of its Session, folded from its log alone, as the Go
// runtime folds it (runtime/state.go): the conversation the model reads,
// the inbox messages not yet admitted, the open Turn, and the tool calls
// recorded without a result. A live agent folds every event it appends and
// a resumed one folds the log it reads, so the two cannot disagree.

import type { Message as InboxMessage, ToolCall as ToolCallBody } from "./generated/events.js";
import { isKnown, type LoggedEvent, type OtherEvent } from "./sessionlog.js";

/** One entry of the conversation the model reads. */
export interface ChatMessage {
  role: "user" | "assistant" | "tool";
  text: string;
  /** The calls an assistant message made. */
  toolCalls?: ModelToolCall[];
  /** The call a tool message answers. */
  toolCallId?: string;
  toolName?: string;
  isError?: boolean;
}

/** One call a model asks the agent to make; arguments are JSON. */
export interface ModelToolCall {
  id: string;
  name: string;
  arguments: unknown;
}

type ItemStatus = "spliced" | "claimed" | "admitted" | "discarded" | "released";

/** One inbox message and how far it got. */
export interface InboxItem {
  message: InboxMessage;
  inboxSeq: number;
  status: ItemStatus;
}

export class SessionState {
  /** The conversation the model reads. */
  history: ChatMessage[] = [];
  /** Every spliced inbox message, by id, so a redelivered one is never spliced twice. */
  readonly inbox = new Map<string, InboxItem>();
  /** Spliced messages not yet admitted or released, in splice order: the next-step queue. */
  queue: InboxItem[] = [];
  /** The highest inbox stream sequence spliced; reading resumes after it. */
  inboxSeq = 0;
  /** The open Turn ("" when idle) and the steps it has ended. */
  turn = "";
  step = 0;
  /** Tool calls recorded without a result. */
  open: ToolCallBody[] = [];
  private response = -1;
  private requested = false;

  static fold(log: Array<LoggedEvent | OtherEvent>): SessionState {
    const s = new SessionState();
    for (const e of log) s.apply(e);
    return s;
  }

  /** Folds one event; types this SDK does not read change nothing. */
  apply(e: LoggedEvent | OtherEvent): void {
    if (!isKnown(e)) return;
    switch (e.type) {
      case "turn/start":
        this.turn = e.data.turn;
        this.step = 0;
        break;
      case "turn/end":
        this.closeResponse();
        this.turn = "";
        // A Turn that ends releases every reply it did not admit (D8).
        for (const it of this.queue) it.status = "released";
        this.queue = [];
        break;
      case "step/end":
        if (this.requested && this.response < 0) this.history.push({ role: "assistant", text: "" });
        this.closeResponse();
        this.step = e.data.step;
        break;
      case "request/header":
        this.closeResponse();
        this.requested = true;
        break;
      case "assistant/message":
        this.responseMessage().text += joinText(e.data.content);
        break;
      case "tool/call": {
        const m = this.responseMessage();
        (m.toolCalls ??= []).push({ id: e.data.callId, name: e.data.name, arguments: e.data.arguments });
        this.open.push(e.data);
        break;
      }
      case "tool/result":
        this.closeResponse();
        this.open = this.open.filter((c) => c.callId !== e.data.callId);
        this.history.push({
          role: "tool",
          toolCallId: e.data.callId,
          toolName: e.data.name ?? "",
          text: joinText(e.data.content),
          isError: Boolean(e.data.isError) || e.data.error != null,
        });
        break;
      case "user/message":
        this.closeResponse();
        this.history.push({ role: e.data.message.role as ChatMessage["role"], text: joinText(e.data.message.content) });
        this.settle(e.data.message.id, "admitted");
        break;
      case "agent/inbox/spliced": {
        const id = e.data.message.id;
        if (!this.inbox.has(id)) {
          const it: InboxItem = { message: e.data.message, inboxSeq: e.data.inboxSeq ?? 0, status: "spliced" };
          this.inbox.set(id, it);
          this.queue.push(it);
        }
        this.inboxSeq = Math.max(this.inboxSeq, e.data.inboxSeq ?? 0);
        break;
      }
      case "agent/inbox/claimed": {
        const it = this.inbox.get(e.data.messageId);
        if (it && it.status === "spliced") it.status = "claimed";
        break;
      }
      case "agent/inbox/discarded":
        this.settle(e.data.messageId, "discarded");
        break;
      case "tool/ptc-dispatch":
        break;
    }
  }

  /** Whether the open Turn still owes a model request: its conversation does not end in a response without tool calls. */
  needsModel(): boolean {
    const last = this.history[this.history.length - 1];
    if (!last) return true;
    return last.role !== "assistant" || (last.toolCalls?.length ?? 0) > 0;
  }

  private responseMessage(): ChatMessage {
    if (this.response < 0) {
      this.history.push({ role: "assistant", text: "" });
      this.response = this.history.length - 1;
    }
    return this.history[this.response]!;
  }

  private closeResponse(): void {
    this.response = -1;
    this.requested = false;
  }

  private settle(id: string, status: ItemStatus): void {
    const it = this.inbox.get(id);
    if (!it || it.status === "admitted" || it.status === "discarded" || it.status === "released") return;
    it.status = status;
    this.queue = this.queue.filter((q) => q !== it);
  }
}

/** Concatenates the text of message parts; null reads as empty. */
export function joinText(parts: Array<{ text: string }> | null | undefined): string {
  return (parts ?? []).map((p) => p.text).join("");
}
