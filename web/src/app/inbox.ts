// The inbox: every question waiting across the Sessions a token grants,
// most urgent first, from the gateway's inbox feed (docs/protocol.md,
// "The inbox"). It holds the latest summary of each Session and answers
// what the inbox page, the title badge and the notifications ask: which
// questions wait, in which order, and how long each live wait has left.

import type { SessionSummary } from "../protocol/frames";
import type { CallStatus } from "../wire";

/** One question call waiting somewhere. */
export interface InboxItem {
  session: string;
  callId: string;
  status: CallStatus;
  /** The first question's text, and how many the call asks. */
  question: string;
  header: string | undefined;
  count: number;
  /** A late reply to it waits for the agent: nothing is asked of the person. */
  queued: boolean;
  /** The Host deadline of a live timed wait (ms since the epoch), when the gateway knows it. */
  deadline: number | undefined;
  /** The Session seq of the event that opened the call. */
  seq: number;
}

/** The urgency classes, most urgent first. */
function rank(item: InboxItem): number {
  if (item.queued) return 3;
  if (item.status === "open") return item.deadline !== undefined ? 0 : 1;
  return 2;
}

/**
 * Most urgent first: live waits by their deadline (the soonest first), then
 * live waits without one (keyed blocking asks), then continued questions
 * (still answerable, nobody waits), oldest call first within a Session,
 * and last those whose reply is already queued.
 */
export function byUrgency(a: InboxItem, b: InboxItem): number {
  return (
    rank(a) - rank(b) ||
    (a.deadline ?? 0) - (b.deadline ?? 0) ||
    (a.session < b.session ? -1 : a.session > b.session ? 1 : 0) ||
    a.seq - b.seq
  );
}

export class Inbox {
  private sessions = new Map<string, SessionSummary>();
  /** What a feed that is not ready yet has sent; it replaces sessions at ready. */
  private next: Map<string, SessionSummary> | undefined = new Map();
  private loadedOnce = false;

  /** Takes a summary frame's Sessions; one with no active call leaves the inbox. */
  apply(summaries: readonly SessionSummary[]): void {
    const into = this.next ?? this.sessions;
    for (const s of summaries) {
      if (s.active.length === 0) into.delete(s.session);
      else into.set(s.session, s);
    }
  }

  /** The feed sent everything that existed when it opened: that is the inbox now. */
  markReady(): void {
    if (this.next) this.sessions = this.next;
    this.next = undefined;
    this.loadedOnce = true;
  }

  /** Some feed was ready once: there is an inbox to show, if perhaps an old one while a new feed loads. */
  get loaded(): boolean {
    return this.loadedOnce;
  }

  /** A new feed starts (after a reconnect): until it is ready the last inbox stays shown. */
  reset(): void {
    this.next = new Map();
  }

  get ready(): boolean {
    return this.next === undefined;
  }

  /** Every waiting call, most urgent first. */
  items(): InboxItem[] {
    const out: InboxItem[] = [];
    for (const s of this.sessions.values()) {
      for (const c of s.active) {
        const first = c.questions[0];
        out.push({
          session: s.session,
          callId: c.callId,
          status: c.status,
          question: first?.question ?? "",
          header: first?.header,
          count: c.questions.length,
          queued: c.queued !== undefined,
          deadline: c.status === "open" ? s.deadlines[c.callId] : undefined,
          seq: c.seq,
        });
      }
    }
    return out.sort(byUrgency);
  }

  /** The Sessions listed, in the order of their most urgent question. */
  sessionIds(): string[] {
    return [...new Set(this.items().map((i) => i.session))];
  }
}

/** The questions that wait for the person: open or continued, with no reply queued. */
export function waitingCount(items: readonly InboxItem[]): number {
  return items.filter((i) => !i.queued).length;
}
