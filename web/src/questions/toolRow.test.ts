import { describe, expect, it } from "vitest";
import type { ToolResult } from "../wire";
import { call, sampleQuestions, view } from "../testing/questionHarness";
import { Text } from "./text";
import { toolRowState } from "./toolRow";

function result(text: string, extra: Partial<ToolResult> = {}): ToolResult {
  return { callId: "c1", name: "ask_user_question", content: [{ type: "text", text }], ...extra };
}
const pending = result(JSON.stringify({ pending: true, callId: "c1", message: "no answer yet" }));
const answers = [
  { id: "db", selected: ["SQLite"] },
  { id: "extras", selected: [] },
];

describe("question tool row (P5)", () => {
  it("an open call is waiting", () => {
    expect(toolRowState({ callId: "c1", view: view([call("c1", "open")]) })).toMatchObject({ kind: "waiting", label: Text.rowWaiting, action: undefined });
  });

  it("P4: an open call whose panel this Client hid offers to show it again", () => {
    expect(toolRowState({ callId: "c1", view: view([call("c1", "open")]), panelHidden: true })).toMatchObject({ kind: "waiting", action: "show", actionLabel: Text.rowShowAction });
  });

  it("a continued call says the answer is still available and offers to answer", () => {
    expect(toolRowState({ callId: "c1", view: view([call("c1", "continued")]), result: pending })).toMatchObject({
      kind: "continued",
      label: Text.rowContinued,
      action: "answer",
    });
  });

  it("a queued late reply shows the submitted answers behind View answers", () => {
    const state = toolRowState({ callId: "c1", view: view([call("c1", "continued", { queued: { messageId: "m1", answers, seq: 9 } })]), result: pending });
    expect(state).toMatchObject({ kind: "queued", label: Text.rowQueued, action: "view-answers", actionLabel: "View answers", discardable: true });
    expect(state.items?.map((i) => [i.id, i.selected, i.skipped])).toEqual([
      ["db", ["SQLite"], false],
      ["extras", [], true],
    ]);
  });

  it("discarding the queued reply restores the answer action", () => {
    expect(toolRowState({ callId: "c1", view: view([call("c1", "continued")]), result: pending })).toMatchObject({ action: "answer", discardable: false });
  });

  it("a late-settled call reads {a}/{t} answered and opens the recorded answers read-only, though its own result is pending", () => {
    const state = toolRowState({
      callId: "c1",
      view: view([], 20, [{ callId: "c1", questions: sampleQuestions, answers, late: true, seq: 19 }]),
      result: pending,
    });
    expect(state).toMatchObject({ kind: "answered", label: "1/2 answered", answered: 1, total: 2, late: true, action: "view" });
  });

  it("an in-time answer batch reads answered, also for a call the projection does not track", () => {
    const state = toolRowState({ callId: "c1", questions: sampleQuestions, view: view([]), result: result(JSON.stringify({ answers })) });
    expect(state).toMatchObject({ kind: "answered", label: "1/2 answered", late: false });
  });

  it.each([
    ["ASK_CANCELLED", "cancelled", Text.rowCancelled],
    ["ASK_ABORTED", "interrupted", Text.rowInterrupted],
    ["NO_PROVIDER", "closed", Text.rowClosed],
  ])("an error result %s reads %s", (code, kind, label) => {
    const state = toolRowState({ callId: "c1", view: view([]), result: result(`failed: ${code}`, { isError: true, error: { code } }) });
    expect(state).toMatchObject({ kind, label, action: undefined });
  });

  it("a pending result the projection no longer lists is closed; with no view yet it is continued", () => {
    expect(toolRowState({ callId: "c1", view: view([]), result: pending }).kind).toBe("closed");
    expect(toolRowState({ callId: "c1", result: pending }).kind).toBe("continued");
  });

  it("a Turn that ended without a result is interrupted; a running one is waiting", () => {
    expect(toolRowState({ callId: "c1", view: view([]), turnEnded: true }).kind).toBe("interrupted");
    expect(toolRowState({ callId: "c1", view: view([]) }).kind).toBe("waiting");
  });

  it("an unreadable result is closed", () => {
    expect(toolRowState({ callId: "c1", view: view([]), result: result("not json") }).kind).toBe("closed");
    expect(toolRowState({ callId: "c1", view: view([]), result: result(JSON.stringify({ answers: [{ selected: [] }] })) }).kind).toBe("closed");
  });
});
