import { describe, expect, it } from "vitest";
import { ManualClock } from "../testing/manualClock";
import type { CardAction } from "./cardState";
import { ClaimController, type ClaimHandlers } from "./claims";

// The controller alone: it runs effects on channels, claims and countdowns,
// and feeds what they report back as actions.

function controller(closeAtOnce = false) {
  const clock = new ManualClock();
  const actions: CardAction[] = [];
  const log: string[] = [];
  const claims: { callId: string; handlers: ClaimHandlers }[] = [];
  let changes = 0;
  const c = new ClaimController({
    clock,
    dispatch: (a) => actions.push(a),
    changed: () => changes++,
    transport: {
      attachWait(_session, callId, handlers) {
        claims.push({ callId, handlers });
        if (closeAtOnce) handlers.closed({ code: "UNAVAILABLE", message: "not connected" });
        return { close: () => log.push(`close ${callId}`) };
      },
    },
  });
  return { c, clock, actions, log, claims, changes: () => changes };
}

describe("ClaimController", () => {
  it("sends each request's outcome once, on the channel it holds", () => {
    const { c } = controller();
    const sent: string[] = [];
    c.hold("r1", { settle: (v) => sent.push(`settle ${v.answers.length}`), reject: (e) => sent.push(`reject ${e.code}`), delegate: () => sent.push("delegate") });
    c.run({ kind: "settle", requestId: "r1", answers: [] });
    c.run({ kind: "delegate", requestId: "r1" });
    expect(sent).toEqual(["settle 0"]);
  });

  it("feeds claim frames and closes back as actions, and closes the claim it opened", () => {
    const { c, actions, claims, log } = controller();
    c.run({ kind: "claimOpen", key: "k", requestId: "r1", session: "s1", callId: "c1" });
    claims[0]?.handlers.frame({ remainingMs: 5 });
    expect(actions).toEqual([{ type: "claimFrame", key: "k", requestId: "r1", data: { remainingMs: 5 } }]);
    c.run({ kind: "claimClose", requestId: "r1" });
    c.run({ kind: "claimClose", requestId: "r1" });
    expect(log).toEqual(["close c1"]);
  });

  it("a claim that ends while it opens is reported and never closed again", () => {
    const { c, actions, log } = controller(true);
    c.run({ kind: "claimOpen", key: "k", requestId: "r1", session: "s1", callId: "c1" });
    expect(actions).toEqual([{ type: "claimClosed", key: "k", requestId: "r1", error: { code: "UNAVAILABLE", message: "not connected" } }]);
    c.run({ kind: "claimClose", requestId: "r1" });
    expect(log).toEqual([]);
  });

  it("runs the card's countdown and reports expiry for the request it was started for (P1, W5)", () => {
    const { c, clock, actions, changes } = controller();
    c.run({ kind: "countdown", key: "k", op: "start", requestId: "r1", disposition: undefined, focused: false });
    c.run({ kind: "countdown", key: "k", op: "attach", remainingMs: 3000 });
    expect(c.countdown("k")).toEqual({ phase: "running", label: "Continuing in 3s", remainingMs: 3000, active: true });
    c.run({ kind: "countdown", key: "k", op: "focus" });
    clock.advance(10_000);
    expect(c.countdown("k")?.phase).toBe("paused");
    c.run({ kind: "countdown", key: "k", op: "blur" });
    clock.advance(3000);
    expect(actions).toEqual([{ type: "expired", key: "k", requestId: "r1" }]);
    expect(changes()).toBeGreaterThan(0);
  });

  it("a restarted countdown replaces the old one, which can no longer expire; drop forgets it", () => {
    const { c, clock, actions } = controller();
    c.run({ kind: "countdown", key: "k", op: "start", requestId: "r1", disposition: undefined, focused: false });
    c.run({ kind: "countdown", key: "k", op: "attach", remainingMs: 1000 });
    c.run({ kind: "countdown", key: "k", op: "start", requestId: "r2", disposition: "held", focused: false });
    c.run({ kind: "countdown", key: "k", op: "attach", remainingMs: 1000 });
    clock.advance(5000);
    expect(actions).toEqual([]);
    expect(c.countdown("k")?.phase).toBe("frozen");
    c.run({ kind: "countdown", key: "k", op: "drop" });
    expect(c.countdown("k")).toBeUndefined();
  });
});
