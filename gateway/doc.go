// Package gateway is the Client transport of Holdover: an HTTP server
// that serves the web UI, /healthz, and a WebSocket endpoint (/ws)
// speaking the generic JSON protocol of docs/protocol.md; /metrics is
// served apart (Server.MetricsHandler), never on the UI's port.
//
// It owns connections, access tokens (static ones from a file, and
// short-lived signed ones verified against a key or a JWKS URL, whose
// connections end when they expire), per-connection and per-token limits,
// the browser hardening headers (headers.go), and one shared feed per
// watched Session. It must never own a question timer,
// decide question state, or branch on a question event or method name:
// the question service and the Client own those. Everything a Client
// reaches goes through a [Service] binding, by one rule:
//
//   - Every name a Client uses is "<service>.<op>"; the service part picks
//     the binding, the op part is looked up in it, never in code.
//   - call "<service>.<op>" with params P is a NATS request on
//     "<Service.Subjects>.<op>" with body P, for the ops in Service.Calls.
//     A service answered by each Session's own process (Service.SessionSubject,
//     the live root's "session.discard") is requested on the subject of the
//     Session params.session names instead. The reply is the result; a reply
//     with the micro-service error headers, or one Service.ReplyError reads
//     as an error, becomes an error frame with the service's code and message.
//     Every call carries the token's user (holdover.UserHeader).
//   - open "<service>.<op>" runs Service.Streams[op]; its messages become
//     frame frames, its end a close frame.
//   - watch of Session S reads S's log (holdover.session.S.events in
//     SESSIONS) from the asked seq and then follows it, and follows the
//     projection (key S of KV userQuestions). Each Service.Events source
//     follows S too; its requests become request frames named by the
//     source's event name, and settle, reject and delegate go back to the
//     request they name. The userQuestions binding reads requests on
//     holdover.session.S.ask and their ends on holdover.session.S.ask.cancel.
//   - Whatever names a Session (a watch, or params.session of a call or
//     stream) needs a token that grants it; params naming none need the
//     all-Sessions grant "*".
//
// Every Client frame is taken by its spec in one table (frames.go): what
// it needs before it runs (hello, a Session the token grants), how the
// rate limit paces it and its handler; the frames themselves, and every
// name and code of the protocol, are package clientwire's.
//
// Limits bound each connection: frame size, frame rate (a token bucket),
// watches, streams and calls; and each token: its connections at once and
// the frames they send together (tokenlimits.go). A frame over a limit is dropped with an
// error frame carrying a stable code; the connection survives. Frames that
// only end or answer something (close, unwatch, settle, reject, delegate)
// are never rate limited, since dropping one could hold a claim open.
//
// When a WebSocket closes, the gateway releases every claim the Client
// held, then delegates every request it still held (W4). Claims are NATS
// consumers held through the gateway's connection: give that connection a
// reconnect wait well below the claim release bound (DefaultReconnectWait).
package gateway
