// The page's link to the gateway, told honestly. "Live" means every watch
// the page holds is live (its ready frame came: history and projection are
// in, and new events, views and requests follow as they happen); before
// that the page is connecting or catching up, and after a drop it says
// when it tries again. It also schedules those retries, on a Clock, so the
// words and the back-off are tested together (docs/protocol.md,
// "Watching a Session" and "Reconnecting").

import type { Clock } from "../questions/clock";
import { seconds } from "../questions/text";
import type { WireError } from "../wire";
import { reconnectDelayMs } from "./boot";

/**
 * - `connecting`: the socket is opening, or hello is not answered yet.
 * - `loading`: the gateway answered; some watch is not live yet.
 * - `live`: every watch that was not refused is live.
 * - `waiting`: the connection dropped; a retry is scheduled.
 * - `stopped`: the gateway refused the token; nothing retries.
 */
export type LinkPhase = "connecting" | "loading" | "live" | "waiting" | "stopped";

export const LinkText = {
  noToken: "No access token",
  connecting: "Connecting…",
  reconnecting: "Reconnecting…",
  loading: (live: number, total: number) => `Loading… ${live} of ${total} Sessions live`,
  loadingInbox: "Loading the inbox…",
  catchingUpInbox: "Reconnected · catching up",
  catchingUp: (live: number, total: number) => `Reconnected · catching up (${live} of ${total} Sessions live)`,
  live: "Live",
  retryIn: (ms: number) => `Disconnected · reconnecting in ${seconds(ms)}s`,
  refused: (session: string, error: WireError) => `${session}: ${error.code}: ${error.message}`,
} as const;

export class Link {
  private phaseNow: LinkPhase = "connecting";
  private attempt = 0;
  /** Whether a connection was ever live: a later one is a reconnect. */
  private wasLive = false;
  private readonly ready = new Set<string>();
  private readonly refused = new Map<string, WireError>();
  private problem: WireError | undefined;
  private retryAt = 0;

  /**
   * sessions are the watches the page holds on each connection; connect
   * opens a new connection, and changed runs whenever the text may differ.
   */
  constructor(
    private readonly sessions: readonly string[],
    private readonly clock: Clock,
    private readonly connect: (attempt: number) => void,
    private readonly changed: () => void,
    /** The page follows the inbox feed (one watch, named "inbox") rather than Sessions. */
    private readonly inbox = false,
  ) {}

  get phase(): LinkPhase {
    return this.phaseNow;
  }

  /** Starts the first connection. */
  start(): void {
    this.opening();
  }

  /** The gateway accepted hello: the watches are on their way. */
  welcomed(): void {
    if (this.phaseNow !== "connecting") return;
    this.attempt = 0;
    this.problem = undefined;
    this.set(this.allReady() ? "live" : "loading");
  }

  /** Session's watch is live. */
  watchReady(session: string): void {
    this.ready.add(session);
    if (this.phaseNow === "loading" && this.allReady()) this.set("live");
    else this.changed();
  }

  /** Session's watch was refused or failed; it does not hold up "live", and the text names it. */
  watchFailed(session: string, error: WireError): void {
    this.refused.set(session, error);
    if (this.phaseNow === "loading" && this.allReady()) this.set("live");
    else this.changed();
  }

  /** An error about the connection; UNAUTHORIZED ends the page's attempts. */
  failed(error: WireError): void {
    this.problem = error;
    if (error.code === "UNAUTHORIZED") this.set("stopped");
    else this.changed();
  }

  /** The socket closed: every watch is gone; retry after the back-off unless stopped. */
  closed(): void {
    this.ready.clear();
    this.refused.clear();
    if (this.phaseNow === "stopped") return;
    this.attempt += 1;
    this.retryAt = this.clock.now() + reconnectDelayMs(this.attempt);
    this.set("waiting");
    this.clock.setTimeout(() => this.opening(), reconnectDelayMs(this.attempt));
    this.tick();
  }

  /** The status line. */
  text(): string {
    const problem = this.problem ? [`${this.problem.code}: ${this.problem.message}`] : [];
    switch (this.phaseNow) {
      case "connecting":
        return this.attempt === 0 ? LinkText.connecting : LinkText.reconnecting;
      case "waiting":
        return LinkText.retryIn(this.retryAt - this.clock.now());
      case "stopped":
        return problem[0] ?? LinkText.noToken;
    }
    const watched = this.sessions.length - this.refused.size;
    const live = [...this.ready].filter((s) => !this.refused.has(s)).length;
    const loading = this.inbox
      ? this.wasLive
        ? LinkText.catchingUpInbox
        : LinkText.loadingInbox
      : this.wasLive
        ? LinkText.catchingUp(live, watched)
        : LinkText.loading(live, watched);
    const head = this.phaseNow === "live" ? LinkText.live : loading;
    return [head, ...[...this.refused].map(([s, e]) => LinkText.refused(s, e)), ...problem].join(" · ");
  }

  /** The page has no token: nothing connects. */
  noToken(): void {
    this.set("stopped");
  }

  private opening(): void {
    this.set("connecting");
    this.connect(this.attempt);
  }

  /** Counts the seconds down while a retry waits. */
  private tick(): void {
    if (this.phaseNow !== "waiting") return;
    // Wake when the whole seconds shown change.
    const left = this.retryAt - this.clock.now();
    this.clock.setTimeout(() => {
      this.changed();
      this.tick();
    }, left % 1000 || 1000);
  }

  private allReady(): boolean {
    return this.sessions.every((s) => this.ready.has(s) || this.refused.has(s));
  }

  private set(phase: LinkPhase): void {
    if (phase === "live") this.wasLive = true;
    this.phaseNow = phase;
    this.changed();
  }
}
