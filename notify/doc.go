// Package notify owns reaching the person outside the browser: it turns
// the question transitions of each Session's fold into webhook
// notifications (a new question, a question that went pending) and
// delivers each to every configured URL at least once, with a stable
// idempotency key, retries on back-off and a dead-letter count.
//
// It reads the Session log through a durable consumer of its own and
// acknowledges an event only once its notifications were delivered or
// dead-lettered, so a restart loses none. What a question's state is, it
// learns only from projection.View.Apply: it never decides question state
// from raw events, never answers or claims a question, and never writes
// any Holdover state (its consumer's acknowledgements are all it changes).
package notify
