import { describe, expect, it } from "vitest";
import { call, sampleQuestions, view } from "../testing/questionHarness";
import { EventLog } from "../testing/sessionEvents";
import type { Block, ProcessGroup, Row, Turn } from "./model";
import { buildTranscript } from "./model";

const answers = [
  { id: "db", selected: ["SQLite"] },
  { id: "extras", selected: [] },
];

/** A compact picture of the layout: turns with their parts, groups with their rows. */
function shape(blocks: Block[]): unknown[] {
  return blocks.map((b) =>
    b.kind === "turn"
      ? { turn: b.turn, trigger: b.trigger?.kind, content: b.content.map((p) => (p.kind === "group" ? { group: p.step, rows: p.rows.map(rowKind) } : rowKind(p))) }
      : rowKind(b),
  );
}
function rowKind(r: Row): string {
  return r.kind === "tool" ? `tool:${r.name}` : r.kind;
}
function turns(blocks: Block[]): Turn[] {
  return blocks.filter((b): b is Turn => b.kind === "turn");
}
function groups(t: Turn): ProcessGroup[] {
  return t.content.filter((p): p is ProcessGroup => p.kind === "group");
}
function allRows(blocks: Block[]): Row[] {
  return blocks.flatMap((b) => (b.kind !== "turn" ? [b] : [...(b.trigger ? [b.trigger] : []), ...b.content.flatMap((p) => (p.kind === "group" ? p.rows : [p]))]));
}

describe("ordinary process grouping", () => {
  it("a user message triggers the Turn; each step's activity is a group; the final answer stands after them", () => {
    const log = new EventLog()
      .turnStart("t1")
      .user("t1", "m1", "Set up the service")
      .assistant("t1", "a1", "Looking around")
      .call("t1", "k1", "read_file", { path: "go.mod" })
      .result("t1", "k1", "read_file", "module x")
      .stepEnd("t1", 1)
      .call("t1", "k2", "run_tests", {})
      .result("t1", "k2", "run_tests", "ok")
      .stepEnd("t1", 2)
      .assistant("t1", "a2", "Done: the service is set up.")
      .stepEnd("t1", 3)
      .turnEnd("t1");
    const blocks = buildTranscript(log.events, view([]));
    expect(shape(blocks)).toEqual([
      { turn: "t1", trigger: "user", content: [{ group: 1, rows: ["assistant", "tool:read_file"] }, { group: 2, rows: ["tool:run_tests"] }, "assistant"] },
    ]);
    const [t] = turns(blocks);
    expect(t).toMatchObject({ ended: true, steps: 3, toolCalls: 2, expanded: true });
    expect(t?.summary).toBe("Agent turn · 3 steps · 2 tool calls · Done: the service is set up.");
    expect(groups(t as Turn).map((g) => [g.expanded, g.summary])).toEqual([
      [false, "Step 1 · read_file"],
      [false, "Step 2 · run_tests"],
    ]);
  });

  it("earlier ended Turns start folded; the last and running ones unfolded, with their groups open while running", () => {
    const log = new EventLog().turnStart("t1").user("t1", "m1", "one").assistant("t1", "a1", "first").turnEnd("t1").turnStart("t2").user("t2", "m2", "two").call("t2", "k1", "read_file", {});
    const [t1, t2] = turns(buildTranscript(log.events, view([])));
    expect(t1?.expanded).toBe(false);
    expect(t2).toMatchObject({ expanded: true, ended: false });
    expect(t2?.summary).toContain("running");
    expect(groups(t2 as Turn)[0]?.expanded).toBe(true);
  });

  it("a user message admitted mid-Turn stands between groups", () => {
    const log = new EventLog().turnStart("t1").user("t1", "m1", "go").call("t1", "k1", "a", {}).result("t1", "k1", "a", "ok").stepEnd("t1", 1).user("t1", "m2", "also this").call("t1", "k2", "b", {});
    expect(shape(buildTranscript(log.events, undefined))).toEqual([{ turn: "t1", trigger: "user", content: [{ group: 1, rows: ["tool:a"] }, "user", { group: 2, rows: ["tool:b"] }] }]);
  });

  it("a Turn whose question needs the user starts unfolded with that group open, even when it ended", () => {
    const log = new EventLog().turnStart("t1").user("t1", "m1", "go").ask("t1", "q1", sampleQuestions).pending("t1", "q1").stepEnd("t1", 1).assistant("t1", "a1", "moved on").turnEnd("t1").turnStart("t2").user("t2", "m2", "next").turnEnd("t2");
    const [t1] = turns(buildTranscript(log.events, view([call("q1", "continued")])));
    expect(t1?.expanded).toBe(true);
    expect(groups(t1 as Turn)[0]?.expanded).toBe(true);
    const [folded] = turns(buildTranscript(log.events, view([])));
    expect(folded?.expanded).toBe(false);
  });

  it("question rows carry their questions, results and whether the Turn ended; PTC sub-calls become rows of their own", () => {
    const log = new EventLog()
      .turnStart("t1")
      .ask("t1", "q1", sampleQuestions)
      .call("t1", "rc", "run_code", { code: "ask()" })
      .ptc("t1", "rc", "q2", "ask_user_question", { questions: sampleQuestions, timeout: 5 }, JSON.stringify({ pending: true }))
      .turnEnd("t1", "interrupted");
    const rows = allRows(buildTranscript(log.events, undefined));
    expect(rows.map((r) => (r.kind === "tool" ? [r.callId, r.questions?.length, r.result !== undefined, r.turnEnded, r.parentCallId] : r.kind))).toEqual([
      ["q1", 2, false, true, undefined],
      ["rc", undefined, false, true, undefined],
      ["q2", 2, true, true, "rc"],
    ]);
  });

  it("repeated and out-of-order events lay out once, in seq order", () => {
    const log = new EventLog().turnStart("t1").user("t1", "m1", "go").assistant("t1", "a1", "hi");
    const scrambled = [log.events[2], log.events[0], log.events[1], log.events[2], log.events[0]].filter((e) => e !== undefined);
    expect(shape(buildTranscript(scrambled, undefined))).toEqual(shape(buildTranscript(log.events, undefined)));
  });
});

describe("reply node placement (G1–G3)", () => {
  it("a reply keeps who gave it (source.user), so its node can name the user", () => {
    const log = new EventLog().turnStart("t1").user("t1", "m1", "go").ask("t1", "q1", sampleQuestions).pending("t1", "q1").stepEnd("t1", 1).reply("t1", "r1", "q1", sampleQuestions, answers, undefined, "ana");
    const reply = allRows(buildTranscript(log.events, view([]))).find((r) => r.kind === "reply");
    expect(reply?.kind === "reply" ? reply.message.source.user : undefined).toBe("ana");
  });

  it("G2: a reply renders once, as a reply row, never also as a user row; spliced copies are not rows", () => {
    const log = new EventLog().turnStart("t1").user("t1", "m1", "go").ask("t1", "q1", sampleQuestions).pending("t1", "q1").stepEnd("t1", 1).spliced("t1", "r1", "q1").reply("t1", "r1", "q1", sampleQuestions, answers).assistant("t1", "a1", "thanks");
    const rows = allRows(buildTranscript(log.events, view([])));
    expect(rows.filter((r) => r.kind === "reply")).toHaveLength(1);
    expect(rows.filter((r) => r.kind === "user").map((r) => (r.kind === "user" ? r.text : ""))).toEqual(["go"]);
  });

  it("G3: a mid-Turn reply joins the group of the step that admitted it", () => {
    const log = new EventLog().turnStart("t1").user("t1", "m1", "go").ask("t1", "q1", sampleQuestions).pending("t1", "q1").stepEnd("t1", 1).reply("t1", "r1", "q1", sampleQuestions, answers).call("t1", "k2", "apply", {}).result("t1", "k2", "apply", "ok").stepEnd("t1", 2).assistant("t1", "a1", "done").turnEnd("t1");
    const blocks = buildTranscript(log.events, view([]));
    expect(shape(blocks)).toEqual([{ turn: "t1", trigger: "user", content: [{ group: 1, rows: ["tool:ask_user_question"] }, { group: 2, rows: ["reply", "tool:apply"] }, "assistant"] }]);
    expect(groups(turns(blocks)[0] as Turn)[1]?.summary).toBe("Step 2 · apply · reply to earlier questions");
  });

  it("G3: a reply that opens a Turn is no trigger: the Turn's disclosure comes first, the reply inside its first group", () => {
    const log = new EventLog()
      .turnStart("t1")
      .ask("t1", "q1", sampleQuestions)
      .pending("t1", "q1")
      .stepEnd("t1", 1)
      .assistant("t1", "a1", "moving on")
      .turnEnd("t1")
      .turnStart("t2")
      .reply("t2", "r1", "q1", sampleQuestions, answers)
      .assistant("t2", "a2", "applying your answer")
      .call("t2", "k1", "apply", {})
      .result("t2", "k1", "apply", "ok")
      .stepEnd("t2", 1)
      .assistant("t2", "a3", "done")
      .turnEnd("t2");
    const [, t2] = turns(buildTranscript(log.events, view([])));
    expect(t2?.trigger).toBeUndefined();
    expect(shape([t2 as Turn])).toEqual([{ turn: "t2", trigger: undefined, content: [{ group: 1, rows: ["reply", "assistant", "tool:apply"] }, "assistant"] }]);
  });

  it("G2: a reply recorded outside any Turn (historical input) is a top-level reply row, once", () => {
    const log = new EventLog().reply(undefined, "r1", "q1", sampleQuestions, answers).user(undefined, "m1", "plain");
    expect(shape(buildTranscript(log.events, undefined))).toEqual(["reply", "user"]);
  });

  it("G1: identical JSON in an ordinary user message is an ordinary user row", () => {
    const json = JSON.stringify({ kind: "answer_to_pending_question", tool: "ask_user_question", callId: "q1", questions: sampleQuestions, answers });
    const log = new EventLog().turnStart("t1").user("t1", "m1", json);
    const [t] = turns(buildTranscript(log.events, undefined));
    expect(t?.trigger).toMatchObject({ kind: "user", text: json });
  });
});
