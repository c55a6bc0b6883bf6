import { describe, expect, it } from "vitest";
import { ManualClock } from "../testing/manualClock";
import { Countdown, type Disposition } from "./countdown";

function setup(disposition?: Disposition) {
  const clock = new ManualClock();
  let expired = 0;
  const countdown = new Countdown({ clock, disposition, onExpire: () => expired++ });
  return { clock, countdown, expired: () => expired };
}

describe("Countdown (P1, P2, W3, W5)", () => {
  it("P1: deadline is local now + remainingMs; 2000 ms reads in (1000, 2000] and expires at 2000", () => {
    const { clock, countdown, expired } = setup();
    expect(countdown.phase).toBe("awaiting-handshake");
    expect(clock.pending()).toBe(0);

    countdown.attach(2000);
    const left = countdown.remainingMs() ?? 0;
    expect(left).toBeGreaterThan(1000);
    expect(left).toBeLessThanOrEqual(2000);
    expect(countdown.label()).toBe("Continuing in 2s");

    clock.advance(999);
    expect(countdown.remainingMs()).toBe(1001);
    expect(countdown.label()).toBe("Continuing in 2s");
    clock.advance(1000);
    expect(countdown.label()).toBe("Continuing in 1s");
    expect(expired()).toBe(0);
    clock.advance(1);
    expect(expired()).toBe(1);
    expect(countdown.phase).toBe("expired");
    expect(countdown.label()).toBeUndefined();
  });

  it("W3: only the first remainingMs frame counts", () => {
    const { clock, countdown, expired } = setup();
    countdown.attach(1000);
    clock.advance(500);
    countdown.attach(60_000);
    expect(countdown.remainingMs()).toBe(500);
    clock.advance(500);
    expect(expired()).toBe(1);
  });

  it("P1: focus pauses with the remainder preserved; blur resumes from it", () => {
    const { clock, countdown, expired } = setup();
    countdown.attach(10_000);
    clock.advance(3_000);
    countdown.focus();
    expect(countdown.phase).toBe("paused");
    expect(countdown.label()).toBe("Paused · 7s remaining");
    expect(clock.pending()).toBe(0);

    clock.advance(60_000);
    expect(expired()).toBe(0);
    expect(countdown.remainingMs()).toBe(7_000);

    countdown.blur();
    expect(countdown.phase).toBe("running");
    clock.advance(6_999);
    expect(expired()).toBe(0);
    clock.advance(1);
    expect(expired()).toBe(1);
  });

  it("P1: focus before the handshake still holds when the frame arrives", () => {
    const { clock, countdown, expired } = setup();
    countdown.focus();
    countdown.attach(5_000);
    expect(countdown.phase).toBe("paused");
    expect(countdown.remainingMs()).toBe(5_000);
    expect(clock.pending()).toBe(0);
    clock.advance(20_000);
    expect(expired()).toBe(0);

    countdown.blur();
    clock.advance(5_000);
    expect(expired()).toBe(1);
  });

  it("P1: blur before the handshake creates no timer", () => {
    const { clock, countdown } = setup();
    countdown.focus();
    countdown.blur();
    expect(clock.pending()).toBe(0);
    expect(countdown.phase).toBe("awaiting-handshake");
    countdown.attach(5_000);
    expect(countdown.phase).toBe("running");
    expect(clock.pending()).toBe(1);
  });

  it.each<Disposition>(["held", "edited"])("P2: a %s disposition before the handshake means no timer at all", (disposition) => {
    const { clock, countdown, expired } = setup(disposition);
    countdown.attach(1_000);
    expect(countdown.phase).toBe("frozen");
    expect(countdown.label()).toBe("Waiting until you answer");
    expect(clock.pending()).toBe(0);
    clock.advance(10_000);
    expect(expired()).toBe(0);
  });

  it("P2: freezing a running countdown clears its timer for good; focus and blur change nothing", () => {
    const { clock, countdown, expired } = setup();
    countdown.attach(3_000);
    countdown.freeze("held");
    expect(countdown.disposition).toBe("held");
    expect(clock.pending()).toBe(0);
    countdown.focus();
    countdown.blur();
    expect(countdown.phase).toBe("frozen");
    expect(clock.pending()).toBe(0);
    countdown.freeze("edited");
    expect(countdown.disposition).toBe("edited");
    countdown.freeze("held");
    expect(countdown.disposition).toBe("edited");
    clock.advance(10_000);
    expect(expired()).toBe(0);
  });

  it("stop ends it without expiry, and later frames do nothing", () => {
    const { clock, countdown, expired } = setup();
    countdown.attach(1_000);
    countdown.stop();
    expect(countdown.phase).toBe("stopped");
    expect(clock.pending()).toBe(0);
    clock.advance(5_000);
    countdown.blur();
    countdown.attach(1_000);
    expect(clock.pending()).toBe(0);
    expect(expired()).toBe(0);
  });

  it("expires exactly once", () => {
    const { clock, countdown, expired } = setup();
    countdown.attach(0);
    clock.advance(0);
    expect(expired()).toBe(1);
    countdown.focus();
    countdown.blur();
    clock.advance(10_000);
    expect(expired()).toBe(1);
  });

  it("§7: a wall clock moved back moves the local expiry later", () => {
    const { clock, countdown, expired } = setup();
    countdown.attach(2_000);
    clock.jump(-5_000);
    clock.advance(2_000);
    expect(expired()).toBe(0);
    expect(countdown.remainingMs()).toBe(5_000);
    clock.advance(5_000);
    expect(expired()).toBe(1);
  });

  it("rejects a remainingMs that is not a non-negative number", () => {
    const { countdown } = setup();
    expect(() => countdown.attach(-1)).toThrow(RangeError);
    expect(() => countdown.attach(Number.NaN)).toThrow(RangeError);
    expect(countdown.phase).toBe("awaiting-handshake");
  });
});
