import { describe, expect, it } from "vitest";
import type { SessionSummary } from "../protocol/frames";
import { call } from "../testing/questionHarness";
import { Inbox, waitingCount } from "./inbox";

const summary = (session: string, active: SessionSummary["active"], deadlines: Record<string, number> = {}): SessionSummary => ({ session, active, settled: 0, lastSeq: 9, deadlines });

describe("Inbox (issue 13 item 1)", () => {
  it("lists live waits by deadline, then waits without one, then continued questions, then queued replies", () => {
    const inbox = new Inbox();
    inbox.markReady();
    inbox.apply([
      summary("a", [call("a1", "continued", { seq: 5 }), call("a0", "continued", { seq: 2 })]),
      summary("b", [call("b1", "open"), call("b2", "open")], { b1: 5_000, b2: 1_000 }),
      summary("c", [call("c1", "open", { blocking: true }), call("c2", "continued", { queued: { messageId: "m", answers: [], seq: 3 } })]),
    ]);
    expect(inbox.items().map((i) => i.callId)).toEqual(["b2", "b1", "c1", "a0", "a1", "c2"]);
    expect(inbox.sessionIds()).toEqual(["b", "c", "a"]);
    expect(waitingCount(inbox.items())).toBe(5);
    expect(inbox.items()[0]).toMatchObject({ session: "b", question: "Which database?", count: 2, deadline: 1_000, queued: false });
  });

  it("a continued call has no deadline even if one was listed; a Session without calls leaves", () => {
    const inbox = new Inbox();
    inbox.markReady();
    inbox.apply([summary("a", [call("a1", "continued")], { a1: 5 })]);
    expect(inbox.items()[0]?.deadline).toBeUndefined();
    inbox.apply([summary("a", [])]);
    expect(inbox.items()).toEqual([]);
  });

  it("shows nothing until the feed is ready; after a reconnect the old inbox stays until the new feed is", () => {
    const inbox = new Inbox();
    inbox.apply([summary("a", [call("a1", "open")]), summary("b", [call("b1", "open")])]);
    expect([inbox.ready, inbox.items()]).toEqual([false, []]);
    inbox.markReady();
    expect(inbox.items()).toHaveLength(2);
    inbox.reset();
    inbox.apply([summary("b", [call("b1", "continued")])]);
    expect([inbox.ready, inbox.loaded, inbox.items().length]).toEqual([false, true, 2]);
    inbox.markReady();
    expect(inbox.items().map((i) => [i.session, i.status])).toEqual([["b", "continued"]]);
  });
});
