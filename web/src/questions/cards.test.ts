import { describe, expect, it } from "vitest";
import { RemoteError } from "../wire";
import { call, Harness, sampleQuestions, view } from "../testing/questionHarness";
import { callDraftKey } from "./drafts";
import { Text } from "./text";

const allSkipped = [
  { id: "db", selected: ["Postgres (Recommended)"] },
  { id: "extras", selected: [] },
];

describe("C1: one card per (Session, callId)", () => {
  it("the forwarded request and the projection share one card", () => {
    const h = new Harness();
    h.cards.reconcile("s1", view([call("c1", "open")]));
    const fromView = h.cards.keyFor("s1", "c1");
    expect(h.cards.get(fromView)?.visible).toBe(false);

    const { key } = h.forwardTimed("c1", 30_000);
    expect(key).toBe(fromView);
    expect(h.cards.list()).toHaveLength(1);
    expect(h.cards.get(key)).toMatchObject({ visible: true, status: "open", channel: "waterfall" });
  });

  it("the same call id in two Sessions makes two cards", () => {
    const h = new Harness();
    h.forwardTimed("c1", 30_000, sampleQuestions, "s1");
    h.forwardTimed("c1", 30_000, sampleQuestions, "s2");
    expect(h.cards.list().map((c) => c.session)).toEqual(["s1", "s2"]);
  });

  it("a forwarded request keeps its card through the claim's first frame before the projection lists it", () => {
    const h = new Harness();
    const { key } = h.forwardTimed("c1", undefined);
    h.cards.reconcile("s1", view([], 3));
    expect(h.cards.get(key)?.hint).toBe(Text.attaching);

    h.transport.claim("c1").handlers.frame({ remainingMs: 10_000 });
    h.cards.reconcile("s1", view([], 4));
    expect(h.cards.get(key)).toMatchObject({ channel: "waterfall", canSubmit: true });

    h.cards.reconcile("s1", view([call("c1", "open")], 5));
    expect(h.cards.list()).toHaveLength(1);
  });

  it("a request forwarded again (same request id) does not reset the card", () => {
    const h = new Harness();
    const { key, requestId } = h.forwardTimed("c1", 10_000);
    h.cards.setCustom(key, "db", "MySQL");
    h.cards.receive({ session: "s1", requestId, payload: { questions: sampleQuestions, wait: { callId: "c1", timed: true } }, channel: h.channel(requestId) });
    expect(h.transport.claims).toHaveLength(1);
    expect(h.cards.get(key)?.draft.db?.custom).toBe("MySQL");
  });
});

describe("C2: unkeyed blocking requests", () => {
  it("each gets its own card with a reload-unique key", () => {
    const h = new Harness();
    const a = h.forward({ questions: sampleQuestions });
    const b = h.forward({ questions: sampleQuestions });
    expect(a.key).not.toBe(b.key);
    expect(h.cards.get(a.key)).toMatchObject({ callId: undefined, channel: "waterfall", countdown: undefined });
    expect(h.transport.claims).toHaveLength(0);
  });

  it("closing the panel rejects with ASK_CANCELLED and ends the card and its draft", () => {
    const h = new Harness();
    const { key, requestId } = h.forward({ questions: sampleQuestions });
    h.cards.setCustom(key, "db", "draft text");
    expect(h.storage.getItem(key)).not.toBeNull();

    h.cards.dismiss(key);
    expect(h.outcomes()).toEqual([{ kind: "reject", request: requestId, error: { code: "ASK_CANCELLED", message: Text.cancelled } }]);
    expect(h.cards.get(key)).toBeUndefined();
    expect(h.storage.getItem(key)).toBeNull();
  });

  it("an old draft never attaches to a request after a reload", () => {
    const h = new Harness();
    const { key } = h.forward({ questions: sampleQuestions });
    h.cards.setCustom(key, "db", "meant for the first request");

    const after = h.reload();
    after.drafts.prune();
    const next = after.forward({ questions: sampleQuestions });
    expect(next.key).not.toBe(key);
    expect(after.cards.get(next.key)).toMatchObject({ disposition: undefined, draft: { db: { custom: "" } } });
    expect(h.storage.getItem(key)).toBeNull();
  });

  it("ends with its waterfall: a submit settles it and the card and its draft go", async () => {
    const h = new Harness();
    const { key, requestId } = h.forward({ questions: sampleQuestions });
    h.cards.select(key, "db", "SQLite");
    expect(await h.cards.submit(key)).toBe(true);
    expect(h.outcomes()).toEqual([{ kind: "settle", request: requestId, answers: [{ id: "db", selected: ["SQLite"] }, { id: "extras", selected: [] }] }]);
    expect(h.cards.get(key)).toBeUndefined();
    expect(h.storage.getItem(key)).toBeNull();
  });

  it("ends with its waterfall: the Host's end notice removes it", () => {
    const h = new Harness();
    const { key, requestId } = h.forward({ questions: sampleQuestions });
    h.cards.cancelled("s1", requestId);
    expect(h.cards.get(key)).toBeUndefined();
    expect(h.outcomes()).toEqual([]);
  });
});

describe("C3: channel selection", () => {
  it("an open card with its waterfall submits through it, every question exactly once", async () => {
    const h = new Harness();
    const { key, requestId } = h.forwardTimed("c1", 30_000);
    h.cards.select(key, "extras", "Tracing");
    expect(await h.cards.submit(key)).toBe(true);
    expect(h.outcomes()).toEqual([
      { kind: "settle", request: requestId, answers: [{ id: "db", selected: ["Postgres (Recommended)"] }, { id: "extras", selected: ["Tracing"] }] },
    ]);
    expect(h.transport.answers).toHaveLength(0);
  });

  it("without a channel submission is disabled with a hint", async () => {
    const h = new Harness();
    h.cards.reconcile("s1", view([call("c1", "open")]));
    const key = h.cards.keyFor("s1", "c1");
    expect(h.cards.get(key)).toMatchObject({ channel: "none", canSubmit: false, hint: Text.noChannel, autofocus: false });
    expect(await h.cards.submit(key)).toBe(false);
    expect(h.sent).toEqual([]);
    expect(h.transport.answers).toHaveLength(0);
  });

  it("a timed request has no channel until the claim's first frame (W3)", () => {
    const h = new Harness();
    const { key } = h.forwardTimed("c1", undefined);
    expect(h.cards.get(key)).toMatchObject({ channel: "none", canSubmit: false, hint: Text.attaching });
    h.transport.claim("c1").handlers.frame({ remainingMs: 5_000 });
    expect(h.cards.get(key)).toMatchObject({ channel: "waterfall", canSubmit: true, hint: undefined });
  });

  it("a continued card submits through the late-answer RPC", async () => {
    const h = new Harness();
    h.cards.reconcile("s1", view([call("c1", "continued")]));
    const key = h.cards.keyFor("s1", "c1");
    expect(h.cards.get(key)).toMatchObject({ channel: "rpc", canSubmit: true, notice: Text.workContinued });
    const done = h.cards.submit(key);
    expect(h.cards.get(key)?.busy).toBe(true);
    expect(h.transport.answers).toEqual([expect.objectContaining({ session: "s1", callId: "c1", answers: allSkipped })]);
    h.transport.answers[0]?.resolve({ accepted: true, messageId: "m1" });
    expect(await done).toBe(true);
    expect(h.sent).toEqual([]);
  });

  it("continued wins over a forwarded request whose end notice has not arrived", () => {
    const h = new Harness();
    const { key } = h.forwardTimed("c1", 30_000);
    h.cards.reconcile("s1", view([call("c1", "continued")]));
    expect(h.cards.get(key)).toMatchObject({ channel: "rpc", countdown: { phase: "stopped" } });
  });
});

describe("C4: delivery races", () => {
  it("after a waterfall submit the card keeps its draft and stays busy until the projection reconciles", async () => {
    const h = new Harness();
    const { key, requestId } = h.forwardTimed("c1", 30_000);
    h.cards.reconcile("s1", view([call("c1", "open")]));
    h.cards.setCustom(key, "db", "CockroachDB");
    await h.cards.submit(key);

    const busy = { busy: true, locked: true, canSubmit: false, autofocus: false };
    expect(h.cards.get(key)).toMatchObject({ ...busy, draft: { db: { custom: "CockroachDB" } } });
    h.cards.setCustom(key, "db", "changed while busy");
    expect(h.cards.get(key)?.draft.db?.custom).toBe("CockroachDB");

    // The Host's end notice and a lagging projection do not decide anything.
    h.cards.cancelled("s1", requestId);
    h.cards.reconcile("s1", view([call("c1", "open")], 11));
    expect(h.cards.get(key)).toMatchObject(busy);
    expect(h.storage.getItem(key)).not.toBeNull();

    // The projection settles the call: the card goes, with its draft (C5).
    h.cards.reconcile("s1", view([], 12, [{ callId: "c1", questions: sampleQuestions, answers: [], late: false, seq: 12 }]));
    expect(h.cards.get(key)).toBeUndefined();
    expect(h.storage.getItem(key)).toBeNull();
  });

  it("if the call turns continued meanwhile, controls re-arm with the resubmit hint and the draft goes through the RPC", async () => {
    const h = new Harness();
    const { key } = h.forwardTimed("c1", 30_000);
    h.cards.setCustom(key, "db", "CockroachDB");
    await h.cards.submit(key);
    h.cards.reconcile("s1", view([call("c1", "continued")]));

    expect(h.cards.get(key)).toMatchObject({ busy: false, canSubmit: true, channel: "rpc", hint: Text.resubmit, draft: { db: { custom: "CockroachDB" } } });
    const done = h.cards.submit(key);
    expect(h.transport.answers[0]?.answers[0]).toEqual({ id: "db", selected: ["Postgres (Recommended)"], custom: "CockroachDB" });
    h.transport.answers[0]?.resolve({ accepted: true });
    await done;
    expect(h.cards.get(key)?.hint).toBeUndefined();
  });

  it("an accepted RPC hides the panel without settling: the card stays answerable and keeps its draft", async () => {
    const h = new Harness();
    h.cards.reconcile("s1", view([call("c1", "continued")]));
    const key = h.cards.keyFor("s1", "c1");
    h.cards.open(key);
    h.cards.setCustom(key, "db", "x");
    const done = h.cards.submit(key);
    h.transport.answers[0]?.resolve({ accepted: true, messageId: "m1" });
    await done;
    expect(h.cards.get(key)).toMatchObject({ visible: false, status: "continued", canSubmit: true, message: undefined });
    expect(h.storage.getItem(key)).not.toBeNull();

    // The reply is queued: the card locks while admission is pending…
    h.cards.reconcile("s1", view([call("c1", "continued", { queued: { messageId: "m1", answers: allSkipped, seq: 11 } })], 11));
    expect(h.cards.get(key)).toMatchObject({ locked: true, canSubmit: false, hint: Text.queued });
    // …and a discarded reply makes it answerable again.
    h.cards.reconcile("s1", view([call("c1", "continued")], 12));
    h.cards.open(key);
    expect(h.cards.get(key)).toMatchObject({ visible: true, canSubmit: true, draft: { db: { custom: "x" } } });
  });

  it.each([
    ["REPLY_QUEUED", () => new RemoteError({ code: "REPLY_QUEUED", message: "queued" }), Text.replyQueued],
    ["BAD_ANSWER", () => new RemoteError({ code: "BAD_ANSWER", message: 'question "db" has no answer' }), 'question "db" has no answer'],
  ])("an RPC refused with %s becomes the card's message and re-arms", async (_, error, message) => {
    const h = new Harness();
    h.cards.reconcile("s1", view([call("c1", "continued")]));
    const key = h.cards.keyFor("s1", "c1");
    h.cards.open(key);
    const done = h.cards.submit(key);
    h.transport.answers[0]?.reject(error());
    expect(await done).toBe(false);
    expect(h.cards.get(key)).toMatchObject({ message, busy: false, canSubmit: true, visible: true });
  });

  it('an RPC that is not accepted reads "no longer answerable"', async () => {
    const h = new Harness();
    h.cards.reconcile("s1", view([call("c1", "continued")]));
    const key = h.cards.keyFor("s1", "c1");
    const done = h.cards.submit(key);
    h.transport.answers[0]?.resolve({ accepted: false });
    expect(await done).toBe(false);
    expect(h.cards.get(key)?.message).toBe(Text.notAnswerable);
  });

  it.each([
    ["CALL_SETTLED", "This question is answered already."],
    ["CALL_OPEN", "The agent is still waiting on this question: answer it in its card, or once work continues."],
    ["CALL_UNKNOWN", "This question is not tracked, so it cannot be answered late."],
    ["NO_AGENT", "No agent is running this session and none could be resumed, so the answer was not sent. Start an agent in the resume pool, then answer again."],
    ["SOME_NEWER_CODE", "the service's own words"],
  ])("an RPC refused with reason %s says why", async (code, message) => {
    const h = new Harness();
    h.cards.reconcile("s1", view([call("c1", "continued")]));
    const key = h.cards.keyFor("s1", "c1");
    const done = h.cards.submit(key);
    h.transport.answers[0]?.resolve({ accepted: false, reason: { code, message: "the service's own words" } });
    expect(await done).toBe(false);
    expect(h.cards.get(key)).toMatchObject({ message, busy: false, canSubmit: true });
  });
});

describe("C5: removal", () => {
  it("a keyed card goes when its call is absent from the active projection and no forwarded request remains; its draft goes too", () => {
    const h = new Harness();
    h.cards.reconcile("s1", view([call("c1", "continued")]));
    const key = h.cards.keyFor("s1", "c1");
    h.cards.setCustom(key, "db", "x");
    h.cards.reconcile("s1", view([]));
    expect(h.cards.get(key)).toBeUndefined();
    expect(h.storage.getItem(callDraftKey("s1", "c1"))).toBeNull();
  });

  it("a forwarded request keeps an absent call's card; its end then removes it", () => {
    const h = new Harness();
    const { key, requestId } = h.forwardTimed("c1", 30_000);
    h.cards.reconcile("s1", view([]));
    expect(h.cards.get(key)).toBeDefined();
    h.cards.cancelled("s1", requestId);
    expect(h.cards.get(key)).toBeUndefined();
    expect(h.transport.claim("c1").closed).toBe(true);
  });

  it("a transport cancel frame alone never decides that the question is answered", () => {
    const h = new Harness();
    const { key, requestId } = h.forwardTimed("c1", 30_000);
    h.cards.reconcile("s1", view([call("c1", "open")]));
    h.cards.cancelled("s1", requestId);
    expect(h.cards.get(key)).toMatchObject({ status: "open", channel: "none" });
  });

  it("without any view of the Session nothing is removed", () => {
    const h = new Harness();
    const { key, requestId } = h.forwardTimed("c1", 30_000);
    h.cards.cancelled("s1", requestId);
    expect(h.cards.get(key)).toBeDefined();
    h.cards.reconcile("s2", view([]));
    expect(h.cards.get(key)).toBeDefined();
    h.cards.reconcile("s1", view([]));
    expect(h.cards.get(key)).toBeUndefined();
  });

  it("a disconnect drops forwarded requests; projection cards stay", () => {
    const h = new Harness();
    h.cards.reconcile("s1", view([call("c2", "continued")]));
    const timed = h.forwardTimed("c1", 30_000);
    const unkeyed = h.forward({ questions: sampleQuestions });
    h.cards.disconnected();
    expect(h.cards.get(timed.key)).toBeUndefined();
    expect(h.cards.get(unkeyed.key)).toBeUndefined();
    expect(h.cards.get(h.cards.keyFor("s1", "c2"))?.channel).toBe("rpc");
    h.clock.advance(60_000);
    expect(h.outcomes()).toEqual([]);
  });
});

describe("countdown on cards (P1–P4, W4, W5)", () => {
  it("P1: focus before the handshake still holds when the frame arrives; blur resumes", () => {
    const h = new Harness();
    const { key } = h.forwardTimed("c1", undefined);
    h.cards.focus(key);
    h.transport.claim("c1").handlers.frame({ remainingMs: 4_000 });
    expect(h.cards.get(key)?.countdown).toEqual({ phase: "paused", label: "Paused · 4s remaining", remainingMs: 4_000 });
    h.clock.advance(10_000);
    h.cards.blur(key);
    expect(h.cards.get(key)?.countdown?.label).toBe("Continuing in 4s");
    h.clock.advance(4_000);
    expect(h.outcomes()).toEqual([expect.objectContaining({ kind: "reject", error: expect.objectContaining({ code: "ASK_TIMED_OUT" }) })]);
  });

  it("P1: blur before the handshake creates no timer", () => {
    const h = new Harness();
    const { key } = h.forwardTimed("c1", undefined);
    h.cards.focus(key);
    h.cards.blur(key);
    expect(h.clock.pending()).toBe(0);
    expect(h.cards.get(key)?.countdown?.phase).toBe("awaiting-handshake");
  });

  it("P1: a card focused before its request arrives starts paused", () => {
    const h = new Harness();
    h.cards.reconcile("s1", view([call("c1", "open")]));
    const key = h.cards.keyFor("s1", "c1");
    h.cards.focus(key);
    h.forwardTimed("c1", 3_000);
    expect(h.cards.get(key)?.countdown?.phase).toBe("paused");
  });

  it("P2: the first edit freezes the countdown and is saved; after a reload the card starts frozen with no timer", () => {
    const h = new Harness();
    const { key } = h.forwardTimed("c1", 30_000);
    h.cards.select(key, "extras", "Metrics");
    expect(h.cards.get(key)).toMatchObject({ disposition: "edited", countdown: { phase: "frozen", label: Text.waitingUntilAnswer } });
    expect(h.clock.pending()).toBe(0);

    const after = h.reload();
    const again = after.forwardTimed("c1", 25_000);
    expect(again.key).toBe(key);
    expect(after.cards.get(key)).toMatchObject({ disposition: "edited", countdown: { phase: "frozen" }, draft: { extras: { selected: ["Metrics"] } } });
    expect(after.clock.pending()).toBe(0);
    after.clock.advance(60_000);
    expect(after.outcomes()).toEqual([]);
  });

  it("P2: Take time freezes without an edit and is restored on reload, before the handshake", () => {
    const h = new Harness();
    const { key } = h.forwardTimed("c1", 30_000);
    h.cards.takeTime(key);
    expect(h.cards.get(key)).toMatchObject({ disposition: "held", countdown: { phase: "frozen" } });

    const after = h.reload();
    after.forwardTimed("c1", undefined);
    expect(after.cards.get(key)?.countdown?.phase).toBe("frozen");
    after.transport.claim("c1").handlers.frame({ remainingMs: 1_000 });
    expect(after.clock.pending()).toBe(0);
  });

  it("P2: paging and a pre-selected (Recommended) option are not edits", () => {
    const h = new Harness();
    const { key } = h.forwardTimed("c1", 30_000);
    expect(h.cards.get(key)?.draft.db?.selected).toEqual(["Postgres (Recommended)"]);
    h.cards.setPage(key, 1);
    expect(h.cards.get(key)).toMatchObject({ page: 1, disposition: undefined, countdown: { phase: "running" } });
    expect(h.storage.length).toBe(0);
    h.clock.advance(30_000);
    expect(h.outcomes()).toHaveLength(1);
  });

  it("P2: only the first (Recommended) option of a single-select question is pre-selected; all of a multi-select", () => {
    const h = new Harness();
    const questions = [
      { id: "one", question: "Pick", options: [{ label: "A (Recommended)" }, { label: "B (Recommended)" }] },
      { id: "many", question: "Pick", multiSelect: true, options: [{ label: "A (Recommended)" }, { label: "B" }, { label: "C (Recommended)" }] },
    ];
    const { key } = h.forward({ questions, wait: { callId: "b1" } });
    expect(h.cards.get(key)?.draft).toEqual({
      one: { selected: ["A (Recommended)"], custom: "" },
      many: { selected: ["A (Recommended)", "C (Recommended)"], custom: "" },
    });
    expect(h.cards.get(key)?.disposition).toBeUndefined();
  });

  it("select replaces a single choice, toggles a multi choice, and ignores labels that are not options", () => {
    const h = new Harness();
    const { key } = h.forward({ questions: sampleQuestions, wait: { callId: "b1" } });
    h.cards.select(key, "db", "SQLite");
    h.cards.select(key, "extras", "Metrics");
    h.cards.select(key, "extras", "Tracing");
    h.cards.select(key, "extras", "Metrics");
    h.cards.select(key, "db", "Oracle");
    expect(h.cards.get(key)?.draft).toMatchObject({ db: { selected: ["SQLite"] }, extras: { selected: ["Tracing"] } });
  });

  it("P2: focus on an edited surface does not pause anything", () => {
    const h = new Harness();
    const { key } = h.forwardTimed("c1", 30_000);
    h.cards.setCustom(key, "db", "x");
    h.cards.focus(key);
    h.cards.blur(key);
    expect(h.cards.get(key)?.countdown?.phase).toBe("frozen");
  });

  it("P3: autofocus only when the channel is ready, no countdown is active and the card is not locked", async () => {
    const h = new Harness();
    const untimed = h.forward({ questions: sampleQuestions, wait: { callId: "b1" } });
    expect(h.cards.get(untimed.key)).toMatchObject({ channel: "waterfall", countdown: undefined, autofocus: true });

    const timed = h.forwardTimed("c1", undefined);
    expect(h.cards.get(timed.key)?.autofocus).toBe(false); // no channel yet
    h.transport.claim("c1").handlers.frame({ remainingMs: 9_000 });
    expect(h.cards.get(timed.key)?.autofocus).toBe(false); // countdown running
    h.cards.takeTime(timed.key);
    expect(h.cards.get(timed.key)?.autofocus).toBe(true);
    await h.cards.submit(timed.key);
    expect(h.cards.get(timed.key)?.autofocus).toBe(false); // locked
  });

  it("P4: hiding a timed panel keeps its claim and countdown running", () => {
    const h = new Harness();
    const { key } = h.forwardTimed("c1", 5_000);
    h.cards.dismiss(key);
    expect(h.cards.get(key)).toMatchObject({ visible: false, countdown: { phase: "running" } });
    expect(h.transport.claim("c1").closed).toBe(false);
    h.clock.advance(5_000);
    expect(h.outcomes()).toEqual([expect.objectContaining({ kind: "reject" })]);
    h.cards.open(key);
    expect(h.cards.get(key)?.visible).toBe(true);
  });

  it("P4: live says whether this Client still holds an unanswered forwarded request (the row can show the panel)", async () => {
    const h = new Harness();
    h.cards.reconcile("s1", view([call("c2", "continued")]));
    expect(h.cards.get(h.cards.keyFor("s1", "c2"))?.live).toBe(false); // projection only
    const { key } = h.forwardTimed("c1", 5_000);
    expect(h.cards.get(key)?.live).toBe(true);
    await h.cards.submit(key);
    expect(h.cards.get(key)?.live).toBe(false); // its outcome is out
    const expiring = h.forwardTimed("c3", 1_000);
    h.clock.advance(1_000);
    expect(h.cards.get(expiring.key)?.live).toBe(false);
  });

  it("W5: expiry rejects with ASK_TIMED_OUT once; the card then reads Work continued and answers through the RPC", () => {
    const h = new Harness();
    const { key, requestId } = h.forwardTimed("c1", 2_000);
    h.clock.advance(2_000);
    expect(h.outcomes()).toEqual([{ kind: "reject", request: requestId, error: { code: "ASK_TIMED_OUT", message: Text.timedOut } }]);
    expect(h.cards.get(key)).toMatchObject({ notice: Text.workContinued, canSubmit: false, hint: undefined, countdown: { phase: "expired" } });
    // W4: the claim stays until the Host closes it.
    expect(h.transport.claim("c1").closed).toBe(false);

    h.cards.reconcile("s1", view([call("c1", "continued")]));
    expect(h.cards.get(key)).toMatchObject({ channel: "rpc", canSubmit: true, notice: Text.workContinued });
  });

  it("W8 settle-once: a submit before expiry wins and the countdown never rejects", async () => {
    const h = new Harness();
    const { key } = h.forwardTimed("c1", 2_000);
    h.clock.advance(1_999);
    await h.cards.submit(key);
    h.clock.advance(10_000);
    expect(h.outcomes().map((s) => s.kind)).toEqual(["settle"]);
    expect(h.transport.claim("c1").closed).toBe(false); // W4: kept until the Host closes it
  });

  it("W8 settle-once: after expiry a submit sends nothing", async () => {
    const h = new Harness();
    const { key } = h.forwardTimed("c1", 2_000);
    h.clock.advance(2_000);
    expect(await h.cards.submit(key)).toBe(false);
    h.cards.dismiss(key);
    expect(h.outcomes().map((s) => s.kind)).toEqual(["reject"]);
  });

  it("the Host closing the claim stops the local countdown", () => {
    const h = new Harness();
    const { key } = h.forwardTimed("c1", 2_000);
    h.transport.claim("c1").handlers.closed();
    h.clock.advance(5_000);
    expect(h.outcomes()).toEqual([]);
    expect(h.cards.get(key)?.countdown?.phase).toBe("stopped");
  });

  it("§7: a terminal claim-stream failure rejects the foreground question with its error", () => {
    const h = new Harness();
    h.forwardTimed("c1", undefined);
    h.transport.claim("c1").handlers.closed({ code: "INTERNAL", message: "claim consumer lost" });
    expect(h.outcomes()).toEqual([expect.objectContaining({ kind: "reject", error: { code: "INTERNAL", message: "claim consumer lost" } })]);
  });

  it("remainingMs -1 (no Host deadline) attaches the channel with no countdown", () => {
    const h = new Harness();
    const { key } = h.forwardTimed("c1", -1);
    expect(h.cards.get(key)).toMatchObject({ channel: "waterfall", countdown: undefined, autofocus: true });
    expect(h.clock.pending()).toBe(0);
  });

  it("the Host's closing frame ends the claim like a close, and later frames are ignored", () => {
    const h = new Harness();
    const { key } = h.forwardTimed("c1", 2_000);
    h.transport.claim("c1").handlers.frame({ closed: true });
    h.transport.claim("c1").handlers.frame({ remainingMs: 50_000 });
    h.clock.advance(60_000);
    expect(h.outcomes()).toEqual([]);
    expect(h.cards.get(key)?.countdown?.phase).toBe("stopped");
  });

  it.each([[{ remaining: 5 }], [{ remainingMs: -7 }], [{ remainingMs: "10" }], ["10"]])("a claim frame without a valid remainingMs (%j) is a claim failure", (frame) => {
    const h = new Harness();
    h.forwardTimed("c1", undefined);
    h.transport.claim("c1").handlers.frame(frame);
    expect(h.outcomes()).toEqual([expect.objectContaining({ kind: "reject", error: expect.objectContaining({ code: "BAD_REQUEST" }) })]);
    expect(h.transport.claim("c1").closed).toBe(true);
  });

  it("W4: teardown releases each claim before delegating; answered requests are left alone", async () => {
    const h = new Harness();
    h.forwardTimed("c1", 30_000);
    const answered = h.forwardTimed("c2", 30_000);
    await h.cards.submit(answered.key);
    h.cards.teardown();
    expect(h.sent.filter((s) => s.kind !== "settle")).toEqual([
      { kind: "claim-close", callId: "c1" },
      { kind: "delegate", request: "r1" },
      { kind: "claim-close", callId: "c2" },
    ]);
    h.clock.advance(60_000);
    expect(h.outcomes().map((s) => s.kind)).toEqual(["settle", "delegate"]);
  });

  it("a request without questions is rejected with BAD_REQUEST and makes no card", () => {
    const h = new Harness();
    const key = h.cards.receive({ session: "s1", requestId: "r9", payload: { questions: [] }, channel: h.channel("r9") });
    expect(key).toBeUndefined();
    expect(h.outcomes()).toEqual([expect.objectContaining({ kind: "reject", error: expect.objectContaining({ code: "BAD_REQUEST" }) })]);
    expect(h.cards.list()).toEqual([]);
  });
});

describe("discarding a queued reply (P5, D8)", () => {
  const queuedView = (lastSeq = 11) => view([call("c1", "continued", { queued: { messageId: "m1", answers: allSkipped, seq: lastSeq } })], lastSeq);

  it("asks for the queued message to be discarded; the projection then makes the card answerable again", async () => {
    const h = new Harness();
    h.cards.reconcile("s1", queuedView());
    const key = h.cards.keyFor("s1", "c1");
    expect(h.cards.get(key)).toMatchObject({ locked: true, discarding: false });
    const done = h.cards.discardQueued(key);
    expect(h.transport.discards.map((d) => [d.session, d.messageId])).toEqual([["s1", "m1"]]);
    expect(h.cards.get(key)).toMatchObject({ discarding: true, locked: true });
    expect(await h.cards.discardQueued(key)).toBe(false); // one at a time
    expect(h.transport.discards).toHaveLength(1);
    h.transport.discards[0]?.resolve();
    expect(await done).toBe(true);
    // Still locked: only the projection says the reply is gone (C4, C5).
    expect(h.cards.get(key)).toMatchObject({ discarding: false, locked: true, message: undefined });
    h.cards.reconcile("s1", view([call("c1", "continued")], 12));
    h.cards.open(key);
    expect(h.cards.get(key)).toMatchObject({ locked: false, canSubmit: true, channel: "rpc" });
  });

  it.each([
    ["CONFLICT", "inbox message m1 is no longer queued", Text.discardTooLate],
    ["NOT_FOUND", "no inbox message m1", Text.discardTooLate],
    ["UNAVAILABLE", "nothing answers holdover.session.s1.discard right now: the Session's agent is not running", "nothing answers holdover.session.s1.discard right now: the Session's agent is not running"],
  ])("a discard refused with %s becomes the card's message", async (code, message, shown) => {
    const h = new Harness();
    h.cards.reconcile("s1", queuedView());
    const key = h.cards.keyFor("s1", "c1");
    const done = h.cards.discardQueued(key);
    h.transport.discards[0]?.reject(new RemoteError({ code, message }));
    expect(await done).toBe(false);
    expect(h.cards.get(key)).toMatchObject({ message: shown, discarding: false, locked: true });
  });

  it("does nothing for a card without a queued reply", async () => {
    const h = new Harness();
    h.cards.reconcile("s1", view([call("c1", "continued")]));
    expect(await h.cards.discardQueued(h.cards.keyFor("s1", "c1"))).toBe(false);
    expect(h.transport.discards).toHaveLength(0);
  });
});
