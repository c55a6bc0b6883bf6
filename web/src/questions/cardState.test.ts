import { describe, expect, it } from "vitest";
import { call, sampleQuestions, view } from "../testing/questionHarness";
import { cardKey, emptyCards, reduceCards, type CardAction, type CardsState } from "./cardState";
import { cardView } from "./cardView";
import { Text } from "./text";

// The reducer alone: state in, state and effects out, nothing else touched.

/** Runs actions from the empty state; returns the last state and every effect, in order. */
function run(...actions: CardAction[]): { state: CardsState; effects: ReturnType<typeof reduceCards>["effects"] } {
  let state = emptyCards;
  const effects = [];
  for (const a of actions) {
    const step = reduceCards(state, a);
    state = step.state;
    effects.push(...step.effects);
  }
  return { state, effects };
}

const key = cardKey("s1", "c1");
const timed: CardAction = { type: "receive", session: "s1", requestId: "r1", key, draft: undefined, payload: { questions: sampleQuestions, wait: { callId: "c1", timed: true } } };

describe("reduceCards", () => {
  it("is pure: the state passed in is never changed, and an action that changes nothing returns it as it was", () => {
    const { state } = run(timed);
    const before = JSON.stringify([...state.cards.values()]);
    const next = reduceCards(state, { type: "select", key, questionId: "db", label: "SQLite" });
    expect(JSON.stringify([...state.cards.values()])).toBe(before);
    expect(next.state.cards.get(key)?.answers.db?.selected).toEqual(["SQLite"]);
    expect(reduceCards(state, { type: "open", key: "nothing" }).state).toBe(state);
  });

  it("a timed request starts its countdown, then opens its claim; the answer channel waits for the frame (W3)", () => {
    const { state, effects } = run(timed);
    expect(effects).toEqual([
      { kind: "countdown", key, op: "start", requestId: "r1", disposition: undefined, focused: false },
      { kind: "claimOpen", key, requestId: "r1", session: "s1", callId: "c1" },
    ]);
    const card = state.cards.get(key);
    expect(card && cardView(card, undefined)).toMatchObject({ channel: "none", hint: Text.attaching, visible: true });
  });

  it("the claim's frame attaches the channel and the countdown; -1 drops the countdown", () => {
    const a = run(timed, { type: "claimFrame", key, requestId: "r1", data: { remainingMs: 5000 } });
    expect(a.effects.at(-1)).toEqual({ kind: "countdown", key, op: "attach", remainingMs: 5000 });
    expect(a.state.cards.get(key)?.live?.ready).toBe(true);
    const b = run(timed, { type: "claimFrame", key, requestId: "r1", data: { remainingMs: -1 } });
    expect(b.effects.at(-1)).toEqual({ kind: "countdown", key, op: "drop" });
  });

  it("a frame for a request the card no longer holds is ignored", () => {
    const { state } = run(timed, { type: "cancelled", session: "s1", requestId: "r1" });
    expect(reduceCards(state, { type: "claimFrame", key, requestId: "r1", data: { remainingMs: 1 } }).effects).toEqual([]);
  });

  it("a bad payload is rejected with BAD_REQUEST and makes no card", () => {
    const { state, effects } = run({ type: "receive", session: "s1", requestId: "r9", key: "k", draft: undefined, payload: { questions: [] } });
    expect(state.cards.size).toBe(0);
    expect(effects).toEqual([{ kind: "reject", requestId: "r9", error: { code: "BAD_REQUEST", message: "the request carries no questions" } }]);
  });

  it("W8: expiry rejects once; a submit after it sends nothing", () => {
    const { effects, state } = run(
      timed,
      { type: "claimFrame", key, requestId: "r1", data: { remainingMs: 10 } },
      { type: "expired", key, requestId: "r1" },
      { type: "expired", key, requestId: "r1" },
      { type: "submit", key },
    );
    expect(effects.filter((e) => e.kind === "reject" || e.kind === "settle")).toEqual([
      { kind: "reject", requestId: "r1", error: { code: "ASK_TIMED_OUT", message: Text.timedOut } },
    ]);
    expect(state.cards.get(key)?.expired).toBe(true);
  });

  it("P2: the first edit freezes the countdown once and every edit saves the draft", () => {
    const { effects } = run(timed, { type: "setCustom", key, questionId: "db", text: "a" }, { type: "setCustom", key, questionId: "db", text: "ab" });
    expect(effects.filter((e) => e.kind === "countdown" && e.op === "freeze")).toHaveLength(1);
    expect(effects.filter((e) => e.kind === "saveDraft").map((e) => e.kind === "saveDraft" && e.draft.answers.db?.custom)).toEqual(["a", "ab"]);
  });

  it("C3: a continued call submits through the RPC and is busy until its answer comes back", () => {
    const viewed = run({ type: "view", session: "s1", view: view([call("c1", "continued")]), drafts: {} });
    const step = reduceCards(viewed.state, { type: "submit", key });
    expect(step.effects).toEqual([{ kind: "answerRPC", key, session: "s1", callId: "c1", answers: [
      { id: "db", selected: ["Postgres (Recommended)"] },
      { id: "extras", selected: [] },
    ] }]);
    expect(step.state.cards.get(key)?.busy).toBe("rpc");
    const refused = reduceCards(step.state, { type: "answered", key, accepted: false, reason: undefined, error: { code: "REPLY_QUEUED", message: "x" } });
    expect(refused.state.cards.get(key)).toMatchObject({ busy: undefined, message: Text.replyQueued });
  });

  it("C5: removal waits for a view of the Session, and removes the draft and the countdown", () => {
    const cancelled = run(timed, { type: "cancelled", session: "s1", requestId: "r1" });
    expect(cancelled.state.cards.has(key)).toBe(true);
    const step = reduceCards(cancelled.state, { type: "view", session: "s1", view: view([]), drafts: {} });
    expect(step.state.cards.has(key)).toBe(false);
    expect(step.effects).toEqual([{ kind: "countdown", key, op: "drop" }, { kind: "removeDraft", key }]);
  });

  it("a view restores a stored draft for a call that has no card yet", () => {
    const draft = { answers: { db: { selected: ["SQLite"], custom: "" } }, page: 1, disposition: "edited" as const, savedAt: 0 };
    const { state } = run({ type: "view", session: "s1", view: view([call("c1", "continued")]), drafts: { [key]: draft } });
    expect(state.cards.get(key)).toMatchObject({ visible: false, page: 1, disposition: "edited", answers: { db: { selected: ["SQLite"] } } });
  });

  it("W4: teardown closes the claim, then delegates, then stops the countdown", () => {
    const { effects } = run(timed, { type: "claimFrame", key, requestId: "r1", data: { remainingMs: 10 } }, { type: "teardown" });
    expect(effects.slice(-3)).toEqual([
      { kind: "claimClose", requestId: "r1" },
      { kind: "delegate", requestId: "r1" },
      { kind: "countdown", key, op: "stop" },
    ]);
  });
});
