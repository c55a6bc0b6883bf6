// Package waiter owns the foreground wait of a question (W1–W8): the
// TimedQuestionWait with its private cancellation, its original deadline
// and its set of Client claims, the per-worker registry of live waits with
// everything they are found by (call, request id, Session, caller), and
// the mapping of a wait's outcome to the ask and askTimed results.
//
// It is pure Go and must never import NATS or any transport: a transport
// (package worker) drives it through the calls below and acts on what they
// return, keeping no bookkeeping of its own. It never logs, never touches
// the Session log and never decides what an answer means; it only decides
// which outcome came first.
//
// # How a transport uses it
//
// One [Registry] holds every live wait of a worker. For one askTimed call:
//
//  1. Check the requested timeout with holdover.ParseTimeoutMs (BAD_TIMEOUT),
//     then [Registry.Start] the wait from a [Request]: the call, the
//     request id, the caller, the timeout, the questions, and a Settled
//     hook that replies to the caller (DUPLICATE_WAIT for a second live
//     wait of the same call).
//  2. Publish the waterfall request. A "no responders" reply is
//     [Wait.NoProvider]: a timed wait keeps running to its deadline (W6).
//  3. When a Client attaches (a claim consumer appears), find the wait with
//     [Registry.Get] and call [Wait.Claim] with the consumer's name. If ok,
//     send exactly one remainingMs frame with the returned remaining time,
//     then call [Wait.Framed]; if that says the wait settled meanwhile,
//     close the claim yourself. If not ok, send no frame (W3). When the
//     consumer disappears, [Wait.Release] it (W2). After a reconnect, take
//     [Registry.Mark], list the consumers and reconcile: Claim the new ones
//     before Releasing the vanished ones, so a replaced claim never lets the
//     deadline fire in between ([Registry.Waits], [Wait.ClaimsBefore],
//     [Registry.CallersBefore]).
//  4. A Client's answer batch, found by [Registry.ByRequest], is
//     [Wait.Answer]; a Client's rejection (its countdown's ASK_TIMED_OUT,
//     ASK_CANCELLED, any other error) is [Wait.Reject]. The first outcome
//     wins; later ones return false and are dropped (W8).
//  5. The Settled hook runs once, on the goroutine that settled the wait:
//     reply to the caller with [TimedOutcome] applied to [Wait.Result]
//     (answers, or pending for ASK_TIMED_OUT, or the error, W5), and close
//     the claims it names (W4).
//
// A blocking ask keyed by its call id (timeout -1 in the timed schema, M3)
// is a wait started with timeout 0: it has no deadline and ends only by an
// answer, a rejection or its parent's cancellation. A legacy ask has no
// call id; start it with an empty CallID: it is counted, listed by Session
// and ended by the registry but cannot be looked up or claimed by key. For
// both, NoProvider ends the wait with NO_PROVIDER at once, as the blocking
// ask always did.
//
// When a caller is known to be gone, [Registry.EndCaller] ends its waits
// (ASK_ABORTED); on worker shutdown [Registry.EndAll] ends every live wait
// with the error the worker chooses for each (ASK_TIMED_OUT turns timed
// calls pending, so the question stays answerable). [Registry.Session]
// lists a Session's live waits.
//
// # Time
//
// All timing goes through an injected [clockwork.Clock]. A wait holds at
// most one timer, armed only while it has a deadline and no claim; the
// deadline itself never moves, so losing the last claim re-arms the timer
// for what is left of the original deadline, or expires the wait at once.
package waiter
