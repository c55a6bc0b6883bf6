// Builds Session event sequences for transcript tests, shaped like the Go
// runtime records them (events/bodies.go): each builder call appends one
// event with the next seq.

import type { Answer, Question, SessionEvent } from "../wire";
import { ReplyKind, SourceUserQuestionReply } from "../wire";

export class EventLog {
  readonly events: SessionEvent[] = [];

  private add(type: string, data: unknown): this {
    this.events.push({ seq: this.events.length + 1, type, at: "2026-12-02T15:00:00Z", data });
    return this;
  }

  turnStart(turn: string) {
    return this.add("turn/start", { turn });
  }
  turnEnd(turn: string, reason = "done") {
    return this.add("turn/end", { turn, reason });
  }
  stepEnd(turn: string, step: number) {
    return this.add("step/end", { turn, step });
  }
  user(turn: string | undefined, id: string, text: string) {
    return this.add("user/message", { turn, message: { id, role: "user", content: [{ type: "text", text }], source: { kind: "user" } } });
  }
  /** A late reply as the late-answer RPC records it (D6); text defaults to the recorded JSON. */
  reply(turn: string | undefined, id: string, callId: string, questions: Question[], answers: Answer[], text?: string, user?: string) {
    const json = JSON.stringify({ kind: ReplyKind, tool: "ask_user_question", callId, questions, answers });
    return this.add("user/message", {
      turn,
      message: { id, role: "user", content: [{ type: "text", text: text ?? json }], source: { kind: SourceUserQuestionReply, callId, outcome: "answered", ...(user ? { user } : {}) } },
    });
  }
  spliced(turn: string | undefined, id: string, callId: string) {
    return this.add("agent/inbox/spliced", {
      turn,
      message: { id, role: "user", content: [{ type: "text", text: "{}" }], source: { kind: SourceUserQuestionReply, callId, outcome: "answered" } },
    });
  }
  assistant(turn: string, id: string, text: string) {
    return this.add("assistant/message", { turn, id, content: [{ type: "text", text }] });
  }
  call(turn: string, callId: string, name: string, args: unknown) {
    return this.add("tool/call", { turn, callId, name, arguments: args });
  }
  ask(turn: string, callId: string, questions: Question[], timeout = 30) {
    return this.call(turn, callId, "ask_user_question", { questions, timeout });
  }
  result(turn: string, callId: string, name: string, text: string, error?: string) {
    return this.add("tool/result", { turn, callId, name, content: [{ type: "text", text }], ...(error ? { isError: true, error: { code: error } } : {}) });
  }
  pending(turn: string, callId: string) {
    return this.result(turn, callId, "ask_user_question", JSON.stringify({ pending: true, callId, message: "no answer yet" }));
  }
  ptc(turn: string, parentCallId: string, callId: string, name: string, args: unknown, text: string) {
    return this.add("tool/ptc-dispatch", { turn, parentCallId, callId, name, arguments: args, content: [{ type: "text", text }] });
  }
}
