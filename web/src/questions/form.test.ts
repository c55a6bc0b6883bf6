import { describe, expect, it } from "vitest";
import { Harness, sampleQuestions } from "../testing/questionHarness";
import type { Question } from "../wire";
import { advancesOnEnter, announcement, firstProblem, keysHint, optionForKey, planReview, questionProblem, replySummary, replyText, type KeyPress } from "./form";
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

describe("keyboard (issue 13 item 4)", () => {
  const press = (key: string, extra: Partial<KeyPress> = {}): KeyPress => ({ key, shiftKey: false, isComposing: false, keyCode: key.charCodeAt(0), ...extra });
  const q = { id: "db", question: "Which?", options: [{ label: "A" }, { label: "B" }, { label: "C" }] };

  it("1–9 pick the options in order; other keys, missing options and modifiers pick nothing", () => {
    expect(["1", "2", "3", "4", "0", "a"].map((k) => optionForKey(press(k), q, false))).toEqual(["A", "B", "C", undefined, undefined, undefined]);
    expect(optionForKey(press("1", { ctrlKey: true }), q, false)).toBeUndefined();
    expect(optionForKey(press("1", { altKey: true }), q, false)).toBeUndefined();
    expect(optionForKey(press("1", { metaKey: true }), q, false)).toBeUndefined();
    expect(optionForKey(press("1"), { id: "x", question: "Free text" }, false)).toBeUndefined();
  });

  it("a digit typed into free text is text, and an input method's keys are never shortcuts", () => {
    expect(optionForKey(press("1"), q, true)).toBeUndefined();
    expect(optionForKey(press("1", { isComposing: true }), q, false)).toBeUndefined();
    expect(optionForKey(press("1", { keyCode: 229 }), q, false)).toBeUndefined();
    expect(advancesOnEnter(press("Enter", { keyCode: 229 }))).toBe(false);
  });

  it("the hint says what the keys do here", () => {
    expect(keysHint(q, false, true)).toBe("1–3 choose · Enter next · Shift+Enter new line · Esc hide");
    expect(keysHint({ ...q, multiSelect: true }, true, false)).toBe("1–3 toggle · Enter submit · Shift+Enter new line");
    expect(keysHint({ id: "x", question: "Why?" }, true, true)).toBe("Enter submit · Shift+Enter new line · Esc hide");
  });
});
