package waiter

import "github.com/holdover-dev/holdover"

// TimedOutcome maps a timed wait's result to the askTimed result (W5):
// answers stay answers, ASK_TIMED_OUT (from the deadline or a Client
// countdown) becomes pending, and every other error, ASK_ABORTED included,
// is returned unchanged. Call it as TimedOutcome(w.Result(ctx)).
//
// The blocking ask needs no mapping: it returns [Wait.Result] as is.
func TimedOutcome(answers []holdover.Answer, err error) (holdover.Outcome, error) {
	switch {
	case err == nil:
		return holdover.Outcome{Answers: answers}, nil
	case holdover.HasCode(err, holdover.CodeAskTimedOut):
		return holdover.Outcome{Pending: true}, nil
	default:
		return holdover.Outcome{}, err
	}
}
