// The page: the Session list, or one Session's transcript with its
// question cards beside it.

import { useCallback, useEffect } from "preact/hooks";
import type { AppStore } from "../app/store";
import { parseRoute, sessionHref } from "../app/boot";
import { InboxPage } from "./InboxPage";
import { summaryFacts, type SessionSummary } from "../app/sessions";
import { shown, Text } from "../questions/text";
import { useHash, useSubscription, useTicker } from "./hooks";
import { QuestionCard } from "./QuestionCard";
import { Transcript } from "./Transcript";

export function App({ store }: { store: AppStore }) {
  useSubscription(store.subscribe);
  useSubscription(useCallback((listener: () => void) => store.cards.subscribe(listener), [store]));
  const route = parseRoute(useHash(), store.sessions);
  if (!store.hasToken) return <p class="hint">Open this page with ?token=&lt;access token&gt;&amp;session=&lt;Session id&gt;.</p>;
  if (store.inboxMode) return <InboxPage store={store} />;
  return route.page === "session" ? <SessionPage store={store} session={route.session} call={route.call} /> : <SessionList store={store} />;
}

function SessionList({ store }: { store: AppStore }) {
  return (
    <section class="session-list" aria-labelledby="sessions-title">
      <h2 id="sessions-title">Sessions</h2>
      <ul class="sessions">
        {store.directory.list().map((s) => (
          <li key={s.session}>
            <a class="id" href={sessionHref(s.session)}>
              {s.session}
            </a>
            <span class="facts">{summaryFacts(s)}</span>
            <span class="questions">{questionFacts(s, store.cards.list(s.session).filter((c) => c.visible).length)}</span>
          </li>
        ))}
      </ul>
    </section>
  );
}

function questionFacts(s: SessionSummary, shown: number): string {
  const parts = [];
  if (s.open) parts.push(`${s.open} waiting`);
  if (s.continued) parts.push(`${s.continued} still answerable`);
  if (s.queued) parts.push(`${s.queued} reply queued`);
  if (shown) parts.push(`${shown} open here`);
  return parts.join(" · ");
}

function SessionPage({ store, session, call }: { store: AppStore; session: string; call: string | undefined }) {
  // An address naming a call (from the inbox or a notification) opens its card once it exists.
  const wanted = call === undefined ? undefined : store.cards.keyFor(session, call);
  const exists = wanted !== undefined && store.cards.get(wanted) !== undefined;
  useEffect(() => {
    if (!wanted || !exists) return;
    store.cards.open(wanted);
    requestAnimationFrame(() => document.querySelector(`section[data-card-key="${CSS.escape(wanted)}"]`)?.scrollIntoView({ block: "nearest" }));
  }, [wanted, exists]);
  if (!store.directory.has(session)) {
    return (
      <p class="hint">
        This page does not watch Session {session}. <a href="#/">All Sessions</a>
      </p>
    );
  }
  const cards = store.cards.list(session);
  const shown = cards.filter((c) => c.visible);
  const hidden = cards.filter((c) => !c.visible && c.live);
  const summary = store.directory.list().find((s) => s.session === session);
  return (
    <div class="session-page">
      <div class="crumbs">
        <a href={location.pathname}>Inbox</a>
        <a href="#/">All Sessions</a>
        <h2 class="session-id">{session}</h2>
        {summary && <span class="facts">{summaryFacts(summary)}</span>}
      </div>
      <div class={`layout${shown.length + hidden.length > 0 ? " with-dock" : ""}`}>
        <section class="transcript" aria-label="Transcript">
          <Transcript session={session} events={store.directory.events(session)} view={store.directory.view(session)} cards={store.cards} />
        </section>
        {shown.length + hidden.length > 0 && (
          <aside class="dock" aria-label="Questions">
            {shown.map((c) => (
              <QuestionCard key={c.key} cardKey={c.key} cards={store.cards} />
            ))}
            {hidden.length > 0 && <HiddenCards store={store} keys={hidden.map((c) => c.key)} />}
          </aside>
        )}
      </div>
    </div>
  );
}

/** Hidden panels whose request still waits: each can be shown again, with its countdown (P4). */
function HiddenCards({ store, keys }: { store: AppStore; keys: string[] }) {
  const cards = keys.flatMap((k) => store.cards.get(k) ?? []);
  useTicker(cards.some((c) => c.countdown?.phase === "running"));
  return (
    <div class="hidden-cards" role="group" aria-label={Text.hiddenQuestions}>
      <h3>{Text.hiddenQuestions}</h3>
      {cards.map((c) => (
        <button type="button" key={c.key} class="show-card" data-card-key={c.key} onClick={() => store.cards.open(c.key)}>
          {shown(c.questions[0]?.question ?? Text.rowShowAction)}
          {c.countdown?.label ? ` · ${c.countdown.label}` : ""}
        </button>
      ))}
    </div>
  );
}
