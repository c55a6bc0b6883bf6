// A Clock for tests. Time moves only when the test calls advance(), and
// timers fire in deadline order as it passes them. Like a browser, timers
// run on monotonic time while now() reads the wall clock, so jump() can
// model a system clock change that timers do not see.

import type { Clock, TimerHandle } from "../questions/clock";

interface Timer {
  id: number;
  at: number;
  fn: () => void;
}

export class ManualClock implements Clock {
  private monotonic = 0;
  private wallOffset: number;
  private nextId = 1;
  private timers: Timer[] = [];

  constructor(start = 1_700_000_000_000) {
    this.wallOffset = start;
  }

  now(): number {
    return this.monotonic + this.wallOffset;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const timer = { id: this.nextId++, at: this.monotonic + Math.max(0, ms), fn };
    this.timers.push(timer);
    return timer.id;
  }

  clearTimeout(handle: TimerHandle): void {
    this.timers = this.timers.filter((t) => t.id !== handle);
  }

  /** The number of timers set and not yet fired or cleared. */
  pending(): number {
    return this.timers.length;
  }

  /** Moves time forward by ms, firing each timer whose deadline passes, in order. */
  advance(ms: number): void {
    const end = this.monotonic + ms;
    for (;;) {
      const due = this.timers.filter((t) => t.at <= end).sort((a, b) => a.at - b.at || a.id - b.id)[0];
      if (!due) break;
      this.timers = this.timers.filter((t) => t !== due);
      this.monotonic = due.at;
      due.fn();
    }
    this.monotonic = end;
  }

  /** Moves the wall clock only, like a system clock change; timers keep their schedule. */
  jump(ms: number): void {
    this.wallOffset += ms;
  }
}
