import { describe, expect, it } from "vitest";
import { Harness, sampleQuestions } from "../testing/questionHarness";
import type { Question } from "../wire";
import { advancesOnEnter, announcement, firstProblem, planReview, questionProblem, replySummary, replyText } from "./form";
import { pair } from "./reply";
import { Text } from "./text";

const free: Question = { id: "name", question: "Project name?" };
const enter = { key: "Enter", shiftKey: false, isComposing: false, keyCode: 13 };

describe("validation", () => {
  it("a question needs a choice, free text or an explicit Skip", () => {
    const [db] = sampleQuestions as [Question];
    expect(questionProblem(db, { selected: [], custom: "" })).toBe(Text.chooseOrSkip);
    expect(questionProblem(free, { selected: [], custom: "  " })).toBe(Text.writeOrSkip);
    expect(questionProblem(db, { selected: ["SQLite"], custom: "" })).toBeUndefined();
    expect(questionProblem(free, { selected: [], custom: "holdover" })).toBeUndefined();
    expect(questionProblem(db, { selected: [], custom: "", skipped: true })).toBeUndefined();
  });

  it("finds the first question that cannot be submitted; a pre-selected (Recommended) option counts as a choice", () => {
    const h = new Harness();
    const { key } = h.forward({ questions: [...sampleQuestions, free] });
    const draft = () => h.cards.get(key)?.draft ?? {};
    expect(firstProblem([...sampleQuestions, free], draft())).toBe(1);
    h.cards.skip(key, "extras");
    expect(firstProblem([...sampleQuestions, free], draft())).toBe(2);
    h.cards.setCustom(key, "name", "holdover");
    expect(firstProblem([...sampleQuestions, free], draft())).toBe(-1);
  });
});

describe("Skip", () => {
  it("empties the answer on purpose, is an edit, survives a reload, and a later choice clears it", () => {
    const h = new Harness();
    const { key } = h.forwardTimed("c1", 30_000);
    h.cards.select(key, "extras", "Metrics");
    h.cards.skip(key, "extras");
    expect(h.cards.get(key)?.draft.extras).toEqual({ selected: [], custom: "", skipped: true });
    expect(h.cards.get(key)?.countdown?.phase).toBe("frozen");

    const again = h.reload();
    again.forwardTimed("c1", 30_000);
    expect(again.cards.get(key)?.draft.extras?.skipped).toBe(true);
    again.cards.select(key, "extras", "Tracing");
    expect(again.cards.get(key)?.draft.extras).toEqual({ selected: ["Tracing"], custom: "" });
  });

  it("a skipped question goes out as an empty selection without custom text (M5)", async () => {
    const h = new Harness();
    const { key, requestId } = h.forwardTimed("c1", 30_000);
    h.cards.skip(key, "db");
    h.cards.skip(key, "extras");
    await h.cards.submit(key);
    expect(h.outcomes()).toEqual([
      {
        kind: "settle",
        request: requestId,
        answers: [
          { id: "db", selected: [] },
          { id: "extras", selected: [] },
        ],
      },
    ]);
  });
});

describe("Enter advances", () => {
  it("only plain Enter, never Shift+Enter or during IME composition", () => {
    expect(advancesOnEnter(enter)).toBe(true);
    expect(advancesOnEnter({ ...enter, shiftKey: true })).toBe(false);
    expect(advancesOnEnter({ ...enter, isComposing: true })).toBe(false);
    expect(advancesOnEnter({ ...enter, keyCode: 229 })).toBe(false);
    expect(advancesOnEnter({ ...enter, key: "a", keyCode: 65 })).toBe(false);
  });
});

describe("plan review (M8)", () => {
  const plan: Question = { id: "plan", question: "Approve this plan?", detail: "# Plan\n- step", options: [{ label: "Approve" }, { label: "Revise" }] };

  it("a plan-review intent with its approve option and a detail is a plan panel", () => {
    expect(planReview({ kind: "plan-review", approve: "Approve" }, [plan])).toEqual({ approve: "Approve", changes: "Revise", question: plan });
  });

  it("anything else is an ordinary card", () => {
    expect(planReview(undefined, [plan])).toBeUndefined();
    expect(planReview({ kind: "plan-review", approve: "Ship it" }, [plan])).toBeUndefined();
    expect(planReview({ kind: "plan-review", approve: "Approve" }, [{ ...plan, detail: "" }])).toBeUndefined();
    expect(planReview({ kind: "plan-review", approve: "Approve" }, [plan, free])).toBeUndefined();
  });

  it("with several other options a change request selects none of them", () => {
    const three = { ...plan, options: [{ label: "Approve" }, { label: "Revise" }, { label: "Abandon" }] };
    expect(planReview({ kind: "plan-review", approve: "Approve" }, [three])?.changes).toBeUndefined();
  });
});

describe("countdown announcements", () => {
  it("change with the phase and notice, not with the seconds", () => {
    expect(announcement("running", 30_000, undefined)).toBe(announcement("running", 30_000, undefined));
    expect(announcement("paused", 12_400, undefined)).toBe("Countdown paused with 13s remaining.");
    expect(announcement("frozen", undefined, undefined)).toBe(Text.waitingUntilAnswer);
    expect(announcement("expired", undefined, Text.workContinued)).toBe(Text.workContinued);
    expect(announcement("awaiting-handshake", undefined, undefined)).toBe("");
  });
});

describe("reply text", () => {
  const items = pair(sampleQuestions, [
    { id: "db", selected: ["SQLite"], custom: "with WAL" },
    { id: "extras", selected: [] },
  ]);

  it("summarises one line per question", () => {
    expect(replySummary(items)).toBe("Which database?: SQLite, with WAL · Which extras?: Skipped");
    expect(replySummary([])).toBe(Text.noAnswer);
  });

  it("copies questions and answers as plain text", () => {
    expect(replyText(items)).toBe("Which database?\nSQLite, with WAL\n\nWhich extras?\nSkipped");
  });
});
