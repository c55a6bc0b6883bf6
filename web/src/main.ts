// The browser entry point: connect to the gateway that served this page,
// watch the Sessions named in the address, feed question requests and
// projection views into QuestionCards and the Session store, and render
// the page (ui/App.tsx). Reconnects with back-off; cards, drafts and the
// events received survive a reconnect (docs/protocol.md, "Reconnecting").

import { h, render } from "preact";
import { sessionsFromQuery, socketURL, takeToken } from "./app/boot";
import { Link } from "./app/link";
import { AppStore } from "./app/store";
import { Connection, unavailable } from "./protocol/connection";
import { questionRequestEvent } from "./protocol/frames";
import { DraftStore, QuestionCards, systemClock, type QuestionsTransport } from "./questions";
import { App } from "./ui/App";
import { RemoteError } from "./wire";

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

// The cards outlive connections: this transport uses whichever one is current.
const transport: QuestionsTransport = {
  attachWait(session, callId, handlers) {
    if (connection) return connection.attachWait(session, callId, handlers);
    handlers.closed({ code: unavailable, message: "not connected to the gateway" });
    return { close: () => {} };
  },
  answer(session, callId, answers) {
    return connection ? connection.answer(session, callId, answers) : notConnected();
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
const link = new Link(store.sessions, systemClock, connect, () => {
  if (!statusLine) return;
  const text = link.text();
  if (statusLine.textContent !== text) statusLine.textContent = text;
  statusLine.dataset.state = link.phase;
});

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
      cards.disconnected();
      link.closed();
    },
  }, undefined, token);
  connection = current;
  for (const session of store.sessions) {
    current.watch(session, store.directory.resumeFrom(session), {
      events: (events) => {
        store.directory.addEvents(session, events);
        store.changed();
      },
      view: (view) => {
        store.directory.setView(session, view);
        cards.reconcile(session, view);
        store.changed();
      },
      ready: () => link.watchReady(session),
      error: (error) => link.watchFailed(session, error),
    });
  }
}

const root = document.getElementById("app");
if (root) render(h(App, { store }), root);
if (token) link.start();
else link.noToken();
