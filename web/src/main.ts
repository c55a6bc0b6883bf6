// The browser entry point: connect to the gateway that served this page,
// watch the Sessions named in the address, feed question requests and
// projection views into QuestionCards, and show a Session list. The
// transcript, question cards and tool rows are rendered on top of these
// modules later; this page only proves the wiring end to end.

import { reconnectDelayMs, sessionsFromQuery, socketURL, takeToken } from "./app/boot";
import { SessionDirectory, type SessionSummary } from "./app/sessions";
import { Connection, unavailable } from "./protocol/connection";
import { questionRequestEvent } from "./protocol/frames";
import { DraftStore, QuestionCards, systemClock, type QuestionsTransport } from "./questions";
import { RemoteError } from "./wire";

const tokenKey = "holdover.token";

const status = document.getElementById("status");
const app = document.getElementById("app");

function setStatus(text: string): void {
  if (status) status.textContent = text;
}

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
const sessions = sessionsFromQuery(location.search);
const directory = new SessionDirectory(sessions);

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
cards.subscribe(render);
window.addEventListener("pagehide", () => cards.teardown());

function connect(attempt: number): void {
  if (!token) {
    setStatus("No access token");
    return;
  }
  setStatus(attempt === 0 ? "Connecting…" : "Reconnecting…");
  connection = new Connection(new WebSocket(socketURL(location, token)), {
    welcome: () => {
      attempt = 0;
      setStatus("Connected");
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
      setStatus(`${error.code}: ${error.message}`);
    },
    closed: () => {
      connection = undefined;
      cards.disconnected();
      if (stopped) return;
      const next = attempt + 1;
      setStatus("Disconnected; reconnecting…");
      setTimeout(() => connect(next), reconnectDelayMs(next));
    },
  });
  for (const session of sessions) {
    connection.watch(session, directory.resumeFrom(session), {
      events: (events) => {
        directory.addEvents(session, events);
        render();
      },
      view: (view) => {
        directory.setView(session, view);
        cards.reconcile(session, view);
        render();
      },
      error: (error) => setStatus(`${session}: ${error.code}: ${error.message}`),
    });
  }
}

function render(): void {
  if (!app) return;
  if (!token) {
    app.replaceChildren(paragraph("Open this page with ?token=<access token>&session=<Session id>.", "hint"));
    return;
  }
  if (sessions.length === 0) {
    app.replaceChildren(paragraph("Name the Sessions to watch in the address: ?session=<id>[,<id>…].", "hint"));
    return;
  }
  const list = document.createElement("ul");
  list.className = "sessions";
  for (const summary of directory.list()) list.append(row(summary, cards.list(summary.session).filter((c) => c.visible).length));
  app.replaceChildren(list);
}

function row(s: SessionSummary, shown: number): HTMLLIElement {
  const li = document.createElement("li");
  const id = document.createElement("span");
  id.className = "id";
  id.textContent = s.session;
  const facts = document.createElement("span");
  facts.className = "facts";
  facts.textContent = s.viewed ? `${s.events} events · ${s.settled} answered` : `${s.events} events · waiting for the projection`;
  const questions = document.createElement("span");
  questions.className = "questions";
  const parts = [];
  if (s.open) parts.push(`${s.open} waiting`);
  if (s.continued) parts.push(`${s.continued} still answerable`);
  if (s.queued) parts.push(`${s.queued} reply queued`);
  if (shown) parts.push(`${shown} open here`);
  questions.textContent = parts.join(" · ");
  li.append(id, facts, questions);
  return li;
}

function paragraph(text: string, className: string): HTMLParagraphElement {
  const p = document.createElement("p");
  p.className = className;
  p.textContent = text;
  return p;
}

render();
connect(0);
