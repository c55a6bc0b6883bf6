// Late replies that are stored and not yet read by an agent. A late answer
// the service accepted is stored on its call's reply subject at once (D8),
// but the projection a watch sends is the fold of the Session log, which
// shows the reply queued only once a runtime has spliced it: while no
// runtime serves the Session (it stopped, or the resume pool has not taken
// it yet), the card would offer the answer again and the next answer would
// be refused REPLY_QUEUED. The userQuestions.view endpoint shows such a
// reply as the call's queued reply; StoredReplies asks it and lays what it
// says over the watch's views.

import type { Call, Queued, View } from "../wire";

/** Reads a Session's View from the userQuestions.view endpoint. */
export type FetchView = (session: string) => Promise<View>;

interface SessionStored {
  /** The projection as the watch last sent it. */
  view: View | undefined;
  /** The stored replies the endpoint last showed, by call id. */
  replies: Map<string, Queued>;
  /** What the last question was asked for (see wanted); undefined before any. */
  asked: string | undefined;
  inFlight: boolean;
  /** Ask again once the question in flight is answered. */
  again: boolean;
}

export class StoredReplies {
  private readonly sessions = new Map<string, SessionStored>();

  /**
   * fetch reads the endpoint; changed is called with a Session whose shown
   * view changed because an answer came back (not for views passed to
   * show, whose result the caller already has).
   */
  constructor(
    private readonly fetch: FetchView,
    private readonly changed: (session: string) => void,
  ) {}

  /**
   * The view to show for the projection the watch sent: each continued
   * call the projection shows no reply for, but whose reply the endpoint
   * showed stored, with that reply queued. Asks the endpoint when such
   * calls exist and have changed since it last asked, and, while it shows
   * a reply the projection does not, on every new projection: the reply
   * may have been read, released or discarded since.
   */
  show(session: string, view: View): View {
    const s = this.state(session);
    s.view = view;
    const waiting = new Set(unqueued(view).map((c) => c.callId));
    for (const id of [...s.replies.keys()]) if (!waiting.has(id)) s.replies.delete(id);
    const want = wanted(view, s.replies.size > 0);
    if (want !== "" && want !== s.asked) this.ask(session, s, want);
    return merged(view, s.replies);
  }

  /** The view shown for session now, or undefined before the watch sent one. */
  current(session: string): View | undefined {
    const s = this.sessions.get(session);
    return s?.view && merged(s.view, s.replies);
  }

  /**
   * Asks the endpoint again: after this Client's late answer was accepted
   * (its reply is stored, and the projection shows it only once an agent
   * reads it) or refused REPLY_QUEUED (another reply is).
   */
  refresh(session: string): void {
    const s = this.state(session);
    const want = s.view && wanted(s.view, true);
    if (want) this.ask(session, s, want);
  }

  /** The connection dropped: each Session's next projection asks again, whatever it shows. */
  reset(): void {
    for (const s of this.sessions.values()) s.asked = undefined;
  }

  private state(session: string): SessionStored {
    let s = this.sessions.get(session);
    if (!s) {
      s = { view: undefined, replies: new Map(), asked: undefined, inFlight: false, again: false };
      this.sessions.set(session, s);
    }
    return s;
  }

  private ask(session: string, s: SessionStored, want: string): void {
    s.asked = want;
    if (s.inFlight) {
      s.again = true;
      return;
    }
    s.inFlight = true;
    const settle = (replies: Map<string, Queued> | undefined) => {
      s.inFlight = false;
      const before = s.view && merged(s.view, s.replies);
      if (replies && s.view) {
        const waiting = new Set(unqueued(s.view).map((c) => c.callId));
        s.replies = new Map([...replies].filter(([id]) => waiting.has(id)));
      }
      if (s.again) {
        s.again = false;
        this.ask(session, s, s.asked ?? want);
      }
      if (s.view && JSON.stringify(before) !== JSON.stringify(merged(s.view, s.replies))) this.changed(session);
    };
    this.fetch(session).then(
      (view) => settle(new Map(unqueued(view, true).map((c) => [c.callId, c.queued as Queued]))),
      () => settle(undefined), // the watch's projection stands; the next change asks again
    );
  }
}

/** The continued calls of view without a queued reply, or (withQueued) with one. */
function unqueued(view: View, withQueued = false): Call[] {
  return view.active.filter((c) => c.status === "continued" && Boolean(c.queued) === withQueued);
}

/**
 * What an answer of the endpoint is wanted for: the continued calls the
 * projection shows no reply for, and, while a stored reply is shown
 * (showing), the projection's last seq too; "" when there is nothing to ask.
 */
function wanted(view: View, showing: boolean): string {
  const ids = unqueued(view).map((c) => c.callId);
  if (ids.length === 0) return "";
  return (showing ? `${view.lastSeq}:` : "") + ids.sort().join("\n");
}

function merged(view: View, replies: ReadonlyMap<string, Queued>): View {
  if (replies.size === 0) return view;
  return {
    ...view,
    active: view.active.map((c) => {
      const queued = c.status === "continued" && !c.queued ? replies.get(c.callId) : undefined;
      return queued ? { ...c, queued } : c;
    }),
  };
}
