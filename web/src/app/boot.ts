// What the page needs to know before it connects: where the gateway's
// WebSocket is, the access token, and which Sessions to watch. All of it
// comes from the page address (docs/protocol.md, "Connecting").

/** The WebSocket address of the gateway serving this page: ws(s)://<host>/ws?token=… */
export function socketURL(location: Pick<Location, "protocol" | "host">, token: string): string {
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  return `${scheme}//${location.host}/ws?token=${encodeURIComponent(token)}`;
}

/** The Sessions named by ?session=a&session=b or ?session=a,b, each once, in order. */
export function sessionsFromQuery(search: string): string[] {
  const out: string[] = [];
  for (const value of new URLSearchParams(search).getAll("session")) {
    for (const id of value.split(",")) {
      const trimmed = id.trim();
      if (trimmed !== "" && !out.includes(trimmed)) out.push(trimmed);
    }
  }
  return out;
}

/**
 * The token from ?token=, and the address without it. The page keeps the
 * token in sessionStorage and drops it from the address bar, so it does not
 * end up in history or a copied link.
 */
export function takeToken(href: string): { token: string | undefined; cleaned: string } {
  const url = new URL(href);
  const token = url.searchParams.get("token") ?? undefined;
  url.searchParams.delete("token");
  return { token, cleaned: url.toString() };
}

/** The wait before reconnect attempt n (1-based): doubling from 1 s, at most 30 s. */
export function reconnectDelayMs(attempt: number): number {
  return Math.min(30_000, 1000 * 2 ** Math.max(0, attempt - 1));
}

/** Which page the address shows: the Session list, or one Session's transcript (with one call's card opened). */
export type Route = { page: "list" } | { page: "session"; session: string; call?: string };

/** The link to a Session's transcript page. */
export function sessionHref(session: string): string {
  return `#/s/${encodeURIComponent(session)}`;
}

/**
 * The address of a call's card, from anywhere (the inbox, a notification):
 * the page watching its Session, with the card opened.
 */
export function cardHref(session: string, callId: string): string {
  return `?session=${encodeURIComponent(session)}${cardHash(session, callId)}`;
}

/** The hash of a call's card on a page that watches its Session. */
export function cardHash(session: string, callId: string): string {
  return `${sessionHref(session)}/c/${encodeURIComponent(callId)}`;
}

/**
 * Reads the page from the address hash: "#/s/<id>" is a transcript,
 * "#/s/<id>/c/<callId>" the transcript with that call's card open, "#/"
 * the list. With no hash, a page watching exactly one Session opens it.
 */
export function parseRoute(hash: string, sessions: readonly string[]): Route {
  const m = /^#\/s\/([^/]+)(?:\/c\/([^/]+))?$/.exec(hash);
  if (m) {
    try {
      const session = decodeURIComponent(m[1] ?? "");
      return m[2] === undefined ? { page: "session", session } : { page: "session", session, call: decodeURIComponent(m[2]) };
    } catch {
      return { page: "list" };
    }
  }
  const only = sessions.length === 1 ? sessions[0] : undefined;
  if ((hash === "" || hash === "#") && only !== undefined) return { page: "session", session: only };
  return { page: "list" };
}
