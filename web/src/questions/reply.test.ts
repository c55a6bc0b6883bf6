import { describe, expect, it } from "vitest";
import type { Message } from "../wire";
import { isQuestionReply, readReply } from "./reply";

const questions = [
  { id: "db", question: "Which database?", header: "Storage", options: [{ label: "Postgres" }, { label: "SQLite" }] },
  { id: "name", question: "Project name?" },
];
const replyText = JSON.stringify({
  kind: "answer_to_pending_question",
  tool: "ask_user_question",
  callId: "c1",
  questions,
  answers: [
    { id: "db", selected: ["SQLite"] },
    { id: "name", selected: [], custom: "holdover" },
  ],
});

function message(text: string, source: Message["source"]): Message {
  return { id: "m1", role: "user", content: [{ type: "text", text }], source };
}

describe("late reply node (G1, G2)", () => {
  it("G1: a reply is identified by its source, then its JSON becomes questions and answers", () => {
    const reply = message(replyText, { kind: "user-question-reply", callId: "c1", outcome: "answered" });
    expect(isQuestionReply(reply)).toBe(true);
    expect(readReply(reply)).toEqual({
      kind: "answers",
      callId: "c1",
      items: [
        { id: "db", question: "Which database?", header: "Storage", selected: ["SQLite"], custom: undefined, skipped: false },
        { id: "name", question: "Project name?", header: undefined, selected: [], custom: "holdover", skipped: false },
      ],
    });
  });

  it("G1: identical JSON pasted into an ordinary user message is an ordinary message", () => {
    const pasted = message(replyText, { kind: "user" });
    expect(isQuestionReply(pasted)).toBe(false);
    expect(readReply(pasted)).toBeUndefined();
  });

  it.each([
    ["not JSON", "I meant SQLite"],
    ["another kind", JSON.stringify({ kind: "something_else", answers: [] })],
    ["no answers", JSON.stringify({ kind: "answer_to_pending_question", questions })],
    ["an answer without id", JSON.stringify({ kind: "answer_to_pending_question", answers: [{ selected: [] }] })],
  ])("G1: an unreadable payload (%s) shows its raw text", (_, text) => {
    const reply = message(text, { kind: "user-question-reply", callId: "c1", outcome: "answered" });
    expect(readReply(reply)).toEqual({ kind: "raw", callId: "c1", text });
  });

  it("text split over several parts is read as one", () => {
    const half = Math.floor(replyText.length / 2);
    const reply: Message = {
      id: "m1",
      role: "user",
      content: [{ type: "text", text: replyText.slice(0, half) }, { type: "text", text: replyText.slice(half) }],
      source: { kind: "user-question-reply", callId: "c1", outcome: "answered" },
    };
    expect(readReply(reply)?.kind).toBe("answers");
  });

  it("skipped answers, missing answers and answers to unknown ids all show", () => {
    const text = JSON.stringify({
      kind: "answer_to_pending_question",
      callId: "c1",
      questions,
      answers: [{ id: "db", selected: [] }, { id: "extra", selected: ["x"] }],
    });
    const view = readReply(message(text, { kind: "user-question-reply", callId: "c1", outcome: "answered" }));
    expect(view?.kind === "answers" && view.items.map((i) => [i.id, i.question, i.skipped])).toEqual([
      ["db", "Which database?", true],
      ["name", "Project name?", true],
      ["extra", "extra", false],
    ]);
  });
});
