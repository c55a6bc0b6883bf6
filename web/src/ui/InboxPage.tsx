// The inbox: every question waiting across the Sessions the token grants,
// most urgent first (app/inbox.ts decides the order). Each opens its card
// on the page that watches its Session.

import type { AppStore } from "../app/store";
import { cardHref } from "../app/boot";
import type { InboxItem } from "../app/inbox";
import { waitingCount } from "../app/inbox";
import { shown, Text } from "../questions/text";
import { useTicker } from "./hooks";

export const InboxText = {
  title: "Waiting for you",
  loading: "Loading the questions of your Sessions…",
  empty: "No question is waiting. New ones appear here as agents ask.",
  count: (n: number, sessions: number) => `${n} ${n === 1 ? "question" : "questions"} waiting in ${sessions} ${sessions === 1 ? "Session" : "Sessions"}`,
  more: (n: number) => ` (+${n - 1} more)`,
  dueNow: "Moving on as soon as no window holds it",
} as const;

export function InboxPage({ store }: { store: AppStore }) {
  const inbox = store.inbox;
  const items = inbox.items();
  useTicker(items.some((i) => i.deadline !== undefined));
  if (!inbox.loaded) return <p class="hint">{InboxText.loading}</p>;
  const sessions = new Set(items.map((i) => i.session)).size;
  return (
    <section class="inbox" aria-labelledby="inbox-title">
      <h2 id="inbox-title">{InboxText.title}</h2>
      {items.length === 0 ? (
        <p class="hint">{InboxText.empty}</p>
      ) : (
        <>
          <p class="facts">{InboxText.count(waitingCount(items), sessions)}</p>
          <ul class="inbox-items">
            {items.map((item) => (
              <li key={`${item.session}/${item.callId}`} class={`inbox-item state-${stateOf(item)}`} data-session={item.session} data-call-id={item.callId}>
                <a class="open-card" href={cardHref(item.session, item.callId)}>
                  <span class="q-text">
                    {item.header && <span class="chip">{shown(item.header)}</span>}
                    {shown(item.question)}
                    {item.count > 1 ? InboxText.more(item.count) : ""}
                  </span>
                  <span class="meta">
                    <span class="session">{item.session}</span>
                    <span class="when">{whenText(item, Date.now())}</span>
                  </span>
                </a>
              </li>
            ))}
          </ul>
        </>
      )}
    </section>
  );
}

function stateOf(item: InboxItem): string {
  if (item.queued) return "queued";
  return item.status;
}

/** How the question stands: its time left, or that work went on. */
export function whenText(item: InboxItem, now: number): string {
  if (item.queued) return Text.rowQueued;
  if (item.status === "continued") return Text.rowContinued;
  if (item.deadline === undefined) return Text.rowWaiting;
  const left = item.deadline - now;
  return left > 0 ? Text.continuingIn(left) : InboxText.dueNow;
}
