// The browser entry point: connect to the gateway that served this page,
// watch the Sessions named in the address (or, when it names none, follow
// the inbox feed of every Session the token grants), feed question
// requests and projection views into QuestionCards and the Session store,
// keep the title, favicon and notifications in step with what waits, and
// render the page (ui/App.tsx). Reconnects with back-off; cards, drafts and
// the events received survive a reconnect (docs/protocol.md, "Reconnecting").

import { h, render } from "preact";
import { BrowserAlerts } from "./app/alerts";
import { Attention, type Waiting } from "./app/attention";
import { cardHash, cardHref, parseRoute, sessionsFromQuery, socketURL, takeToken } from "./app/boot";
import { Link } from "./app/link";
import { AppStore } from "./app/store";
import { Connection, unavailable } from "./protocol/connection";
import { questionRequestEvent } from "./protocol/frames";
import { DraftStore, QuestionCards, systemClock, type QuestionsTransport } from "./questions";
import { App } from "./ui/App";
import { AttentionControls } from "./ui/AttentionControls";
import { StoredReplies } from "./app/stored";
import { Codes, codeOf, RemoteError, type View } from "./wire";

const tokenKey = "holdover.token";

/** localStorage, or none when the browser refuses it (private modes, disabled storage). */
function localDrafts(): Storage | undefined {
  try {
    return window.localStorage;
  } catch {
    return undefined;
  }
}

const found = takeToken(location.href);
if (found.token) {
  sessionStorage.setItem(tokenKey, found.token);
  history.replaceState(null, "", found.cleaned);
}
const token = found.token ?? sessionStorage.getItem(tokenKey) ?? undefined;

let connection: Connection | undefined;

function notConnected(): Promise<never> {
  return Promise.reject(new RemoteError({ code: unavailable, message: "not connected to the gateway" }));
}

// A reply stored and not yet read by an agent shows queued (stored.ts):
// each watched Session's view goes through it to the directory and cards.
const stored = new StoredReplies(
  (session) => (connection ? connection.view(session) : notConnected()),
  (session) => {
    const view = stored.current(session);
    if (view) showView(session, view);
  },
);

// The cards outlive connections: this transport uses whichever one is current.
const transport: QuestionsTransport = {
  attachWait(session, callId, handlers) {
    if (connection) return connection.attachWait(session, callId, handlers);
    handlers.closed({ code: unavailable, message: "not connected to the gateway" });
    return { close: () => {} };
  },
  answer(session, callId, answers) {
    if (!connection) return notConnected();
    const sent = connection.answer(session, callId, answers);
    // Accepted, the reply is stored; refused REPLY_QUEUED, another is: an agent may not read it for a while.
    sent.then(
      (result) => result.accepted && stored.refresh(session),
      (err: unknown) => codeOf(err) === Codes.replyQueued && stored.refresh(session),
    );
    return sent;
  },
  discard(session, messageId) {
    return connection ? connection.discard(session, messageId) : notConnected();
  },
};

const drafts = new DraftStore(localDrafts(), { clock: systemClock });
drafts.prune();
const cards = new QuestionCards({ transport, clock: systemClock, drafts });
const store = new AppStore(sessionsFromQuery(location.search), cards, token !== undefined);
window.addEventListener("pagehide", () => cards.teardown());

const statusLine = document.getElementById("status");
const inboxFeed = "inbox";
const link = new Link(store.inboxMode ? [inboxFeed] : store.sessions, systemClock, connect, () => {
  if (!statusLine) return;
  const text = link.text();
  if (statusLine.textContent !== text) statusLine.textContent = text;
  statusLine.dataset.state = link.phase;
}, store.inboxMode);

function connect(): void {
  const current = new Connection(new WebSocket(socketURL(location)), {
    welcome: () => link.welcomed(),
    request: (request) => {
      // The gateway forwards every Remote Event of a watched Session; this
      // Client answers question requests and passes every other one on.
      if (request.event === questionRequestEvent) cards.receive(request);
      else request.channel.delegate();
    },
    cancel: (session, requestId) => cards.cancelled(session, requestId),
    error: (error) => link.failed(error),
    closed: () => {
      connection = undefined;
      stored.reset();
      cards.disconnected();
      store.inbox.reset();
      link.closed();
    },
  }, undefined, token);
  connection = current;
  if (store.inboxMode) {
    current.inbox({
      summary: (sessions) => {
        store.inbox.apply(sessions);
        store.changed();
      },
      ready: () => {
        store.inbox.markReady();
        link.watchReady(inboxFeed);
        store.changed();
      },
      closed: (error) => {
        if (error) link.watchFailed(inboxFeed, error);
      },
    });
  }
  for (const session of store.sessions) {
    current.watch(session, store.directory.resumeFrom(session), {
      events: (events) => {
        store.directory.addEvents(session, events);
        store.changed();
      },
      view: (view) => showView(session, stored.show(session, view)),
      ready: () => link.watchReady(session),
      error: (error) => link.watchFailed(session, error),
    });
  }
}

function showView(session: string, view: View): void {
  store.directory.setView(session, view);
  cards.reconcile(session, view);
  store.changed();
}

// Attention (issue 13 item 2): what waits for the person, checked on every
// change and each second (a live wait's last seconds pass without one).
const alerts = new BrowserAlerts(localDrafts());
const attention = new Attention();

function waiting(): Waiting[] {
  const now = systemClock.now();
  if (store.inboxMode) {
    return store.inbox
      .items()
      .filter((i) => !i.queued)
      .map((i) => ({ key: cards.keyFor(i.session, i.callId), session: i.session, callId: i.callId, question: i.question, deadline: i.deadline }));
  }
  const out: Waiting[] = [];
  for (const session of store.sessions) {
    for (const call of store.directory.view(session)?.active ?? []) {
      if (call.queued) continue;
      const key = cards.keyFor(session, call.callId);
      const countdown = cards.get(key)?.countdown;
      const deadline = countdown?.phase === "running" && countdown.remainingMs !== undefined ? now + countdown.remainingMs : undefined;
      out.push({ key, session, callId: call.callId, question: call.questions[0]?.question ?? "", deadline });
    }
  }
  for (const card of cards.list()) {
    if (card.callId === undefined) out.push({ key: card.key, session: card.session, callId: "", question: card.questions[0]?.question ?? "", deadline: undefined });
  }
  return out;
}

/** A question is on screen when this window is seen and shows it: the inbox, or its Session's page. */
function onScreen(item: Waiting): boolean {
  if (document.visibilityState !== "visible" || !document.hasFocus()) return false;
  if (store.inboxMode) return true;
  const route = parseRoute(location.hash, store.sessions);
  return route.page === "session" && route.session === item.session;
}

/** Brings the person to the card: on this page when it watches the Session, else on one that does. */
function openCard(item: Waiting): void {
  if (item.callId === "") return; // an unkeyed request's card is already in the dock
  if (!store.directory.has(item.session)) {
    location.href = cardHref(item.session, item.callId);
    return;
  }
  location.hash = cardHash(item.session, item.callId);
  cards.open(item.key);
}

function attend(): void {
  const items = waiting();
  alerts.badge(items.length);
  // Alerts wait until the page has caught up: what is there by then is what the person came to see.
  if (link.phase !== "live") return;
  for (const alert of attention.update(items, systemClock.now(), onScreen)) alerts.raise(alert, () => openCard(alert.item));
}
store.subscribe(attend);
cards.subscribe(attend);
setInterval(attend, 1000);

const root = document.getElementById("app");
if (root) render(h(App, { store }), root);
const controls = document.getElementById("controls");
if (controls && token) render(h(AttentionControls, { alerts }), controls);
if (token) link.start();
else link.noToken();
