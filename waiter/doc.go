// Package waiter owns the foreground wait of a question (W1–W8): the
// TimedQuestionWait with its private cancellation, its original Host
// deadline and its set of Client claims, the per-worker registry of live
// waits, and the mapping of a wait's outcome to the ask and askTimed
// results.
//
// It is pure Go and must never import NATS or any transport: a transport
// drives it through the calls below and acts on what they return. It never
// logs, never touches the Session log and never decides what an answer
// means; it only decides which outcome came first.
//
// # How a transport uses it
//
// One [Registry] holds every live wait of a worker. For one askTimed call:
//
//  1. Check the requested timeout with [holdover.ParseTimeoutMs] or [holdover.TimeoutFromMs]
//     (BAD_TIMEOUT), then [Registry.Start] the wait with the agent's request
//     context as parent (DUPLICATE_WAIT for a second live wait of the same
//     call).
//  2. Publish the waterfall request and stop delivering it when
//     [Wait.Context] is done. A "no responders" reply is [Wait.NoProvider]:
//     a timed wait keeps running to its deadline (W6).
//  3. When a Client attaches (a claim consumer appears), call [Wait.Claim]
//     with the consumer's name. If ok, send exactly one remainingMs frame
//     with the returned remaining time; if not, send no frame and close the
//     stream (W3). When the consumer disappears, look the claim up with
//     [Wait.Claimed] and [Claim.Release] it (W2). After a reconnect, list the
//     consumers and reconcile: Claim the new ones before Releasing the
//     vanished ones, so a replaced claim never lets the deadline fire in
//     between ([Registry.Waits] and [Wait.ClaimIDs] give the held side).
//  4. Each claim holder waits on [Claim.Closed]; when it fires the wait has
//     settled and the transport sends its closing frame and deletes the
//     consumer (W4).
//  5. A Client's answer batch is [Wait.Answer]; a Client's rejection
//     (its countdown's ASK_TIMED_OUT, ASK_CANCELLED, any other error) is
//     [Wait.Reject]. The first outcome wins; later ones return false and are
//     dropped (W8).
//  6. Reply to the agent with [TimedOutcome] applied to [Wait.Result]:
//     answers, or pending for ASK_TIMED_OUT, or the error (W5).
//
// A blocking ask keyed by its call id (timeout -1 in the timed schema, M3)
// is a wait started with timeout 0: it has no Host deadline and ends only
// by an answer, a rejection or its parent's cancellation. A legacy ask has
// no call id; start it with an empty CallID: it is counted and ended by the
// registry but cannot be looked up or claimed by key. For both, NoProvider
// ends the wait with NO_PROVIDER at once, as the blocking ask always did.
//
// On worker shutdown [Registry.EndAll] ends every live wait with the error
// the worker chooses (ASK_TIMED_OUT turns timed calls pending, so the
// question stays answerable); when a caller is known to be gone
// [Registry.EndSession] ends its waits with ASK_ABORTED.
//
// # Time
//
// All timing goes through an injected [clockwork.Clock]. A wait holds at
// most one timer, armed only while it has a deadline and no claim; the
// deadline itself never moves, so losing the last claim re-arms the timer
// for what is left of the original deadline, or expires the wait at once.
package waiter
