package bench

import (
	"context"
	"encoding/json"
	"time"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/answerer"
	"github.com/holdover-dev/holdover/askuser"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/liveroot"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/sessionlog"
)

// LateCall is the call every late-answer Session has continued.
const LateCall = "call-1"

// Continued is what late answers are measured on: Sessions whose timed
// call LateCall went pending and whose root is alive, as a runtime
// leaves them.
type Continued struct {
	// Log and Roots are on the agent's credentials, as a runtime writes
	// them; Instance holds its root lease (liveroot.HoldLease), so the
	// worker follows the root until the reply is read instead of asking
	// for a resume (D7).
	Log      *sessionlog.Log
	Roots    *liveroot.Registry
	Instance string
	// Tool is the timed ask_user_question the Sessions' request headers
	// offered.
	Tool *askuser.Tool
	// Store is where the projection worker keeps the Views: each
	// Session's is caught up before the first answer, as in steady state
	// where the projection worker keeps up.
	Store *projection.Store
}

// LateAnswers records a continued call in each of sids, waits until the
// projection worker has folded them all, and returns the late answer to
// Session i given by client (a gateway's answerer), timed from the call
// to its return: the answer returns once its reply's fenced publish on
// the call's reply subject is acknowledged.
func LateAnswers(ctx context.Context, c Continued, client *answerer.Client, sids []string) (func(ctx context.Context, i int) (time.Duration, error), error) {
	for _, sid := range sids {
		if err := c.record(ctx, sid); err != nil {
			return nil, err
		}
	}
	if err := c.folded(ctx, sids); err != nil {
		return nil, err
	}
	return func(ctx context.Context, i int) (time.Duration, error) {
		start := time.Now()
		res, err := client.Answer(ctx, holdover.AnswerRequest{Session: sids[i], CallID: LateCall, Answers: Answers})
		took := time.Since(start)
		if err != nil {
			return 0, err
		}
		if !res.Accepted {
			return 0, holdover.Newf(holdover.CodeInternal, "the late answer to %s was not accepted: %+v", sids[i], res)
		}
		return took, nil
	}, nil
}

// LateAnswer measures n late answers, each beside a raw publish timed
// just before it. Issue 3's target: at most 3× the raw publish.
func LateAnswer(ctx context.Context, answer func(context.Context, int) (time.Duration, error), raw Timed, n int) (Row, error) {
	row := Row{Key: "late", Name: "late answer → reply durable", RawName: "JetStream publish (sync)"}
	for i := range n {
		r, err := raw(ctx)
		if err != nil {
			return row, err
		}
		took, err := answer(ctx, i)
		if err != nil {
			return row, err
		}
		row.Raw, row.Path = append(row.Raw, r), append(row.Path, took)
	}
	return row, nil
}

// record writes to sid's log what a runtime records for a timed question
// that went pending (the request header offering the timed tool, the call,
// its pending result) and registers Instance as sid's live root.
func (c Continued) record(ctx context.Context, sid string) error {
	timeout := int64(30)
	args, err := json.Marshal(holdover.ToolArgs{Questions: Questions, Timeout: &timeout})
	if err != nil {
		return holdover.Wrap(err, holdover.CodeInternal, "encode the call's arguments")
	}
	pending, err := json.Marshal(holdover.Pending{Pending: true, CallID: LateCall, Message: "No answer batch arrived before the timeout."})
	if err != nil {
		return holdover.Wrap(err, holdover.CodeInternal, "encode the pending result")
	}
	var last uint64
	for _, body := range []events.Body{
		&events.RequestHeader{Turn: "t1", Tools: []events.ToolSchema{c.Tool.Schema()}},
		&events.ToolCall{Turn: "t1", CallID: LateCall, Name: holdover.ToolName, Arguments: args},
		&events.ToolResult{Turn: "t1", CallID: LateCall, Name: holdover.ToolName, Content: events.Text(string(pending))},
	} {
		if last, err = c.Log.Append(ctx, sid, last, events.New(time.Now(), body)); err != nil {
			return err
		}
	}
	_, err = c.Roots.Register(ctx, sid, c.Instance)
	return err
}

// folded waits until the projection worker has stored every Session's
// continued call.
func (c Continued) folded(ctx context.Context, sids []string) error {
	deadline := time.Now().Add(2 * time.Minute)
	for _, sid := range sids {
		for {
			v, ok, err := c.Store.Get(ctx, sid)
			if err != nil {
				return err
			}
			if ok && len(v.Active) == 1 && v.Active[0].Status == projection.Continued {
				break
			}
			if time.Now().After(deadline) {
				return holdover.Newf(holdover.CodeInternal, "the projection of %s was not folded within 2 minutes: is a question worker running?", sid)
			}
			select {
			case <-time.After(time.Millisecond): // another process's progress, polled
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return nil
}
