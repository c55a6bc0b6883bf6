// Package termclient is Holdover's terminal Client: `holdover answer`. It
// speaks the same WebSocket protocol as the web Client (docs/protocol.md,
// web/src/protocol) and follows the same rules, in Go.
//
// It owns the Client side of one connection (hello, calls, streams,
// watches, and the one outcome of each forwarded request), the join of a
// Session's projection view with its live requests into one entry per
// call (C1), and the terminal flow: list the open and continued calls,
// claim an open one before answering it so the Host deadline pauses while
// the person types (W2, W3), settle it through the waterfall and keep the
// claim until the worker closes it (W4), and send an answer to a continued
// call through the late-answer RPC (D6, C3).
//
// It must never decide on its own that a question is answered: a settle
// has no acknowledgement and a cancel frame only removes the answer
// channel, so the outcome is read from the projection (C4, C5). It never
// holds a claim on a request it is not answering, and it delegates every
// request it leaves unanswered when it goes.
package termclient
