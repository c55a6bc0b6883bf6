// The time source of the question modules. Everything that reads the time
// or sets a timer takes a Clock, so that tests drive time by hand and the
// browser uses the real one.

/** An opaque timer handle from {@link Clock.setTimeout}. */
export type TimerHandle = unknown;

/** Reads the time and sets one-shot timers. */
export interface Clock {
  /** Milliseconds since the epoch, like Date.now(). */
  now(): number;
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

/** The browser's (or Node's) own clock. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => globalThis.setTimeout(fn, ms),
  clearTimeout: (handle) => globalThis.clearTimeout(handle as ReturnType<typeof globalThis.setTimeout>),
};
