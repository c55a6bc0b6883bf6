// The local countdown of one timed question card (P1, P2, W3, W5).
//
// The Host computes how long the foreground wait has left and sends it once,
// as the claim's first frame. The Client turns that into a local deadline,
// now + remainingMs, and owns everything after: focus pauses it, an edit or
// Take time freezes it, and expiry asks the card to reject the request with
// ASK_TIMED_OUT. Nothing here travels back to the Host (W3).

import type { Clock, TimerHandle } from "./clock";
import { Text } from "./text";

/** Why a countdown is frozen; saved with the browser-local draft (P2). */
export type Disposition = "held" | "edited";

/**
 * Where a countdown is.
 * - `awaiting-handshake`: the claim's remainingMs frame has not arrived.
 * - `running`: a timer is set for the local deadline.
 * - `paused`: manual focus on a pristine surface holds the remainder.
 * - `frozen`: an edit or Take time; the card waits until the user answers.
 * - `expired`: the deadline passed; the expiry callback ran once.
 * - `stopped`: the request ended some other way.
 */
export type CountdownPhase = "awaiting-handshake" | "running" | "paused" | "frozen" | "expired" | "stopped";

export interface CountdownOptions {
  clock: Clock;
  /** Runs once, when the local deadline passes. */
  onExpire: () => void;
  /** Runs after every phase change (not on each passing second). */
  onChange?: () => void;
  /** A disposition restored with a draft: the countdown starts frozen. */
  disposition?: Disposition | undefined;
}

export class Countdown {
  private readonly clock: Clock;
  private readonly onExpire: () => void;
  private readonly onChange: () => void;
  private attached = false;
  private focused = false;
  private frozenAs: Disposition | undefined;
  private ended: "expired" | "stopped" | undefined;
  /** What is left while no timer runs. */
  private remaining = 0;
  /** The local deadline while a timer runs. */
  private deadline = 0;
  private timer: TimerHandle | undefined;

  constructor(options: CountdownOptions) {
    this.clock = options.clock;
    this.onExpire = options.onExpire;
    this.onChange = options.onChange ?? (() => {});
    this.frozenAs = options.disposition;
  }

  /**
   * Takes the claim's first frame. Only the first call counts: the Host
   * sends exactly one frame, and a repeat must not move the deadline.
   * Throws a RangeError for a value that is not a non-negative number.
   */
  attach(remainingMs: number): void {
    if (!Number.isFinite(remainingMs) || remainingMs < 0) {
      throw new RangeError(`remainingMs must be a non-negative number, got ${String(remainingMs)}`);
    }
    if (this.attached || this.ended) return;
    this.attached = true;
    this.remaining = remainingMs;
    this.sync();
  }

  /**
   * Manual focus on a pristine answer surface: pauses, keeping the remainder.
   * Focus before the handshake holds once the frame arrives (P1).
   */
  focus(): void {
    if (this.focused) return;
    this.focused = true;
    this.sync();
  }

  /** Resumes from the preserved remainder. Before the handshake it only forgets the focus. */
  blur(): void {
    if (!this.focused) return;
    this.focused = false;
    this.sync();
  }

  /** First edit or Take time: no timer runs again for this card (P2). */
  freeze(disposition: Disposition): void {
    if (this.frozenAs === disposition || this.ended) return;
    // An edit after Take time is recorded as an edit; the reverse keeps "edited".
    if (this.frozenAs !== "edited") this.frozenAs = disposition;
    this.sync();
  }

  /** Ends the countdown without expiry: the request was answered, cancelled or lost. */
  stop(): void {
    if (this.ended) return;
    this.clear();
    this.ended = "stopped";
    this.onChange();
  }

  get phase(): CountdownPhase {
    if (this.ended) return this.ended;
    if (this.frozenAs) return "frozen";
    if (!this.attached) return "awaiting-handshake";
    return this.focused ? "paused" : "running";
  }

  /** Why the countdown is frozen, if it is. */
  get disposition(): Disposition | undefined {
    return this.frozenAs;
  }

  /** Running or paused: a deadline exists and no edit has frozen it (P3 reads this). */
  get active(): boolean {
    const phase = this.phase;
    return phase === "running" || phase === "paused";
  }

  /** What is left of the wait, while the countdown is running or paused. */
  remainingMs(): number | undefined {
    switch (this.phase) {
      case "running":
        return Math.max(0, this.deadline - this.clock.now());
      case "paused":
        return this.remaining;
      default:
        return undefined;
    }
  }

  /** The countdown's words: "Continuing in Ns", "Paused · Ns remaining" or "Waiting until you answer". */
  label(): string | undefined {
    const phase = this.phase;
    const left = this.remainingMs();
    if (phase === "running" && left !== undefined) return Text.continuingIn(left);
    if (phase === "paused" && left !== undefined) return Text.paused(left);
    if (phase === "frozen") return Text.waitingUntilAnswer;
    return undefined;
  }

  /** Starts or stops the timer so that it runs exactly while the phase is `running`. */
  private sync(): void {
    const run = this.phase === "running";
    if (run && this.timer === undefined) {
      this.deadline = this.clock.now() + this.remaining;
      this.arm();
    } else if (!run && this.timer !== undefined) {
      this.remaining = Math.max(0, this.deadline - this.clock.now());
      this.clear();
    }
    this.onChange();
  }

  private arm(): void {
    this.timer = this.clock.setTimeout(() => this.fire(), Math.max(0, this.deadline - this.clock.now()));
  }

  private fire(): void {
    this.timer = undefined;
    // The wall clock may have moved back since the timer was set; the local
    // deadline, not the timer, decides (SPEC §7: clock changes move expiry).
    if (this.clock.now() < this.deadline) {
      this.arm();
      return;
    }
    this.ended = "expired";
    this.onChange();
    this.onExpire();
  }

  private clear(): void {
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }
}
