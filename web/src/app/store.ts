// The page's state outside the question cards: the watched Sessions and
// what arrived for them. Components subscribe to it and to QuestionCards,
// and re-render on either. The connection status is the Link's.

import type { QuestionCards } from "../questions";
import { Inbox } from "./inbox";
import { SessionDirectory } from "./sessions";

export class AppStore {
  readonly sessions: readonly string[];
  readonly directory: SessionDirectory;
  readonly cards: QuestionCards;
  /** The inbox feed's Sessions, on a page that names no Session to watch. */
  readonly inbox = new Inbox();
  /** Whether a token was found; without one nothing connects. */
  readonly hasToken: boolean;
  private readonly listeners = new Set<() => void>();

  constructor(sessions: readonly string[], cards: QuestionCards, hasToken: boolean) {
    this.sessions = sessions;
    this.directory = new SessionDirectory(sessions);
    this.cards = cards;
    this.hasToken = hasToken;
  }

  subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  /** The page shows the inbox: it names no Session to watch. */
  get inboxMode(): boolean {
    return this.sessions.length === 0;
  }

  changed(): void {
    for (const listener of [...this.listeners]) listener();
  }
}
