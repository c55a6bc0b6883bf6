import { describe, expect, it } from "vitest";
import type { Queued, View } from "../wire";
import { call, view } from "../testing/questionHarness";
import { StoredReplies } from "./stored";

const reply: Queued = { messageId: "reply-1", answers: [{ id: "db", selected: ["SQLite"] }], seq: 41 };

/** StoredReplies over an endpoint whose answers the test gives, one question at a time. */
function harness() {
  const asked: Array<{ session: string; answer: (v: View) => void; fail: () => void }> = [];
  const changed: string[] = [];
  const stored = new StoredReplies(
    (session) =>
      new Promise<View>((resolve, reject) => {
        asked.push({ session, answer: resolve, fail: () => reject(new Error("UNAVAILABLE")) });
      }),
    (session) => changed.push(session),
  );
  /** Answers the oldest question and lets its result settle. */
  const answer = async (v: View) => {
    asked.shift()?.answer(v);
    await Promise.resolve();
    await Promise.resolve();
  };
  const fail = async () => {
    asked.shift()?.fail();
    await Promise.resolve();
    await Promise.resolve();
  };
  return { stored, asked, changed, answer, fail };
}

describe("StoredReplies (issue 24: a reply stored and not yet read shows queued)", () => {
  it("shows a reply the endpoint says is stored on a continued call the projection shows none for", async () => {
    const { stored, asked, changed, answer } = harness();
    const projected = view([call("c1", "continued"), call("c2", "open")]);
    expect(stored.show("s1", projected)).toEqual(projected);
    expect(asked.map((a) => a.session)).toEqual(["s1"]);

    await answer(view([call("c1", "continued", { queued: reply }), call("c2", "open")]));
    expect(changed).toEqual(["s1"]);
    expect(stored.current("s1")?.active.map((c) => c.queued)).toEqual([reply, undefined]);
  });

  it("asks once per set of continued calls without a reply, and on every new projection while it shows one", async () => {
    const { stored, asked, answer } = harness();
    stored.show("s1", view([call("c1", "continued")], 10));
    await answer(view([call("c1", "continued")], 10)); // nothing stored
    stored.show("s1", view([call("c1", "continued")], 11));
    expect(asked).toHaveLength(0);

    stored.show("s1", view([call("c1", "continued"), call("c2", "continued")], 12));
    expect(asked).toHaveLength(1);
    await answer(view([call("c1", "continued"), call("c2", "continued", { queued: reply })], 12));
    // Shown now: the next projection may be the reply's release or discard, so it asks again.
    expect(stored.show("s1", view([call("c1", "continued"), call("c2", "continued")], 13)).active[1]?.queued).toEqual(reply);
    expect(asked).toHaveLength(1);
    await answer(view([call("c1", "continued"), call("c2", "continued")], 13)); // released meanwhile
    expect(stored.current("s1")?.active.every((c) => !c.queued)).toBe(true);
  });

  it("leaves a call to the projection once it shows a reply, and never lays one on an open call", async () => {
    const { stored, asked, answer } = harness();
    stored.show("s1", view([call("c1", "continued")], 10));
    await answer(view([call("c1", "continued", { queued: reply })], 10));
    const spliced: Queued = { ...reply, seq: 12 };
    expect(stored.show("s1", view([call("c1", "continued", { queued: spliced })], 12)).active[0]?.queued).toEqual(spliced);
    expect(asked).toHaveLength(0);
    // The call went back to continued without a reply: the stored one was dropped with the splice.
    expect(stored.show("s1", view([call("c1", "continued")], 14)).active[0]?.queued).toBeUndefined();

    const open = view([call("c9", "open")], 20);
    expect(stored.show("s2", open)).toEqual(open);
    expect(asked.filter((a) => a.session === "s2")).toHaveLength(0);
  });

  it("asks again on refresh and after a reconnect; a failed question leaves the projection as it is", async () => {
    const { stored, asked, changed, answer, fail } = harness();
    const projected = view([call("c1", "continued")], 10);
    stored.show("s1", projected);
    await fail();
    expect(stored.current("s1")).toEqual(projected);
    expect(changed).toEqual([]);

    stored.refresh("s1"); // this Client's late answer was accepted
    expect(asked).toHaveLength(1);
    await answer(view([call("c1", "continued", { queued: reply })], 10));
    expect(changed).toEqual(["s1"]);

    stored.reset();
    stored.show("s1", view([call("c1", "continued")], 10));
    expect(asked).toHaveLength(1);
  });

  it("asks once at a time: a change meanwhile asks again when the answer is in", async () => {
    const { stored, asked, answer } = harness();
    stored.show("s1", view([call("c1", "continued")], 10));
    stored.show("s1", view([call("c1", "continued"), call("c2", "continued")], 11));
    expect(asked).toHaveLength(1);
    await answer(view([call("c1", "continued")], 10));
    expect(asked).toHaveLength(1);
    await answer(view([call("c1", "continued"), call("c2", "continued", { queued: reply })], 11));
    expect(stored.current("s1")?.active[1]?.queued).toEqual(reply);
  });
});
