// What the watch data says about each watched Session: its events (for the
// transcript), its latest projection view, the facts a Session list row
// shows, and where to resume after a reconnect.

import type { SessionEvent, View } from "../wire";

export interface SessionSummary {
  session: string;
  /** The highest Session seq received; a re-watch resumes after it. */
  lastSeq: number;
  events: number;
  /** Questions waiting in the foreground. */
  open: number;
  /** Questions the agent moved on from, still answerable. */
  continued: number;
  /** Late replies waiting for admission. */
  queued: number;
  settled: number;
  /** Whether a projection view has arrived yet. */
  viewed: boolean;
}

export class SessionDirectory {
  private readonly summaries = new Map<string, SessionSummary>();
  private readonly logs = new Map<string, SessionEvent[]>();
  private readonly views = new Map<string, View>();

  constructor(sessions: readonly string[]) {
    for (const session of sessions) {
      this.summaries.set(session, { session, lastSeq: 0, events: 0, open: 0, continued: 0, queued: 0, settled: 0, viewed: false });
    }
  }

  /** Counts events, ignoring ones already seen (a re-watch may repeat the boundary). */
  addEvents(session: string, events: readonly SessionEvent[]): void {
    const s = this.summaries.get(session);
    if (!s) return;
    for (const e of events) {
      if (e.seq <= s.lastSeq) continue;
      s.lastSeq = e.seq;
      s.events += 1;
      const log = this.logs.get(session);
      if (log) log.push(e);
      else this.logs.set(session, [e]);
    }
  }

  /** The Session's events received so far, in seq order, each once. */
  events(session: string): readonly SessionEvent[] {
    return this.logs.get(session) ?? [];
  }

  /** The Session's latest projection view, once one arrived. */
  view(session: string): View | undefined {
    return this.views.get(session);
  }

  /** Whether session is one this page watches. */
  has(session: string): boolean {
    return this.summaries.has(session);
  }

  setView(session: string, view: View): void {
    const s = this.summaries.get(session);
    if (!s) return;
    this.views.set(session, view);
    s.open = view.active.filter((c) => c.status === "open").length;
    s.continued = view.active.filter((c) => c.status === "continued").length;
    s.queued = view.active.filter((c) => c.queued).length;
    s.settled = view.settled.length;
    s.viewed = true;
  }

  /** The Session seq to watch from: one after the last event received. */
  resumeFrom(session: string): number {
    return (this.summaries.get(session)?.lastSeq ?? 0) + 1;
  }

  list(): SessionSummary[] {
    return [...this.summaries.values()].map((s) => ({ ...s }));
  }
}

/**
 * The facts line of a Session: its events and how its questions stand. A
 * Session whose projection has no entry yet (no question events) reads
 * "no questions yet", as one whose questions were all removed would.
 */
export function summaryFacts(s: SessionSummary): string {
  const events = `${s.events} events`;
  if (!s.viewed) return `${events} · loading questions…`;
  if (s.open + s.continued + s.settled === 0) return `${events} · no questions yet`;
  return `${events} · ${s.settled} answered`;
}
