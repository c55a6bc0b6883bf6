// The browser entry point: connect to the gateway that served this page,
// watch the Sessions named in the address, feed question requests and
// projection views into QuestionCards and the Session store, and render
// the page (ui/App.tsx). Reconnects with back-off; cards, drafts and the
// events received survive a reconnect (docs/protocol.md, "Reconnecting").

import { h, render } from "preact";
import { reconnectDelayMs, sessionsFromQuery, socketURL, takeToken } from "./app/boot";
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
let stopped = false;

// The cards outlive connections: this transport uses whichever one is current.
const transport: QuestionsTransport = {
  attachWait(session, callId, handlers) {
    if (connection) return connection.attachWait(session, callId, handlers);
    handlers.closed({ code: unavailable, message: "not connected to the gateway" });
    return { close: () => {} };
  },
  answer(session, callId, answers) {
    if (connection) return connection.answer(session, callId, answers);
    return Promise.reject(new RemoteError({ code: unavailable, message: "not connected to the gateway" }));
  },
};

const drafts = new DraftStore(localDrafts(), { clock: systemClock });
drafts.prune();
const cards = new QuestionCards({ transport, clock: systemClock, drafts });
const store = new AppStore(sessionsFromQuery(location.search), cards, token !== undefined);
window.addEventListener("pagehide", () => cards.teardown());

const status = document.getElementById("status");
store.subscribe(() => {
  if (status && status.textContent !== store.status) status.textContent = store.status;
});

function connect(attempt: number): void {
  if (!token) {
    store.setStatus("No access token");
    return;
  }
  store.setStatus(attempt === 0 ? "Connecting…" : "Reconnecting…");
  connection = new Connection(new WebSocket(socketURL(location, token)), {
    welcome: () => {
      attempt = 0;
      store.setStatus("Connected");
    },
    request: (request) => {
      // The gateway forwards every Remote Event of a watched Session; this
      // Client answers question requests and passes every other one on.
      if (request.event === questionRequestEvent) cards.receive(request);
      else request.channel.delegate();
    },
    cancel: (session, requestId) => cards.cancelled(session, requestId),
    error: (error) => {
      if (error.code === "UNAUTHORIZED") stopped = true;
      store.setStatus(`${error.code}: ${error.message}`);
    },
    closed: () => {
      connection = undefined;
      cards.disconnected();
      if (stopped) return;
      const next = attempt + 1;
      store.setStatus("Disconnected; reconnecting…");
      setTimeout(() => connect(next), reconnectDelayMs(next));
    },
  });
  for (const session of store.sessions) {
    connection.watch(session, store.directory.resumeFrom(session), {
      events: (events) => {
        store.directory.addEvents(session, events);
        store.changed();
      },
      view: (view) => {
        store.directory.setView(session, view);
        cards.reconcile(session, view);
        store.changed();
      },
      error: (error) => store.setStatus(`${session}: ${error.code}: ${error.message}`),
    });
  }
}

const root = document.getElementById("app");
if (root) render(h(App, { store }), root);
connect(0);
