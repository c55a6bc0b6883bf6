package bench

import (
	"context"
	"strconv"
	"time"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/answerer"
	"github.com/holdover-dev/holdover/caller"
)

// Call is one timed question answered in time, split in its two halves:
// askTimed → the request delivered to the Client, and the Client's answer
// → the result at the agent. i names the call (its call id).
type Call func(ctx context.Context, i int) (deliver, answer time.Duration, err error)

// ForegroundCalls watches Session sid with client, an answerer that
// answers every request the moment it reaches it (as a gateway's user
// would, instantly), and returns timed calls by agent on sid under ref,
// the live root the calls carry. Each time is taken where it happens, so
// no measuring goroutine stands in between. The first call (the agent's
// worker lease watch, the worker's watch of the caller lease) is made
// here, untimed. stop ends the watch.
func ForegroundCalls(ctx context.Context, agent *caller.Client, client *answerer.Client, sid string, ref *holdover.AgentRef) (call Call, stop func(), err error) {
	auto := &autoAnswer{answered: make(chan answered, 1)}
	watch, err := client.Watch(ctx, sid, auto)
	if err != nil {
		return nil, nil, err
	}
	stop = func() { _ = watch.Close(context.WithoutCancel(ctx)) }
	call = func(ctx context.Context, i int) (time.Duration, time.Duration, error) {
		start := time.Now()
		out, err := agent.AskTimed(ctx, holdover.AskTimedRequest{
			Session: sid, CallID: "c" + strconv.Itoa(i), Agent: ref, Questions: Questions, TimeoutMs: 600_000,
		})
		end := time.Now()
		if err != nil {
			return 0, 0, err
		}
		if len(out.Answers) != 1 {
			return 0, 0, holdover.Newf(holdover.CodeInternal, "askTimed %d came back %+v, not the Client's answer", i, out)
		}
		select {
		case a := <-auto.answered:
			if a.err != nil {
				return 0, 0, a.err
			}
			return a.got.Sub(start), end.Sub(a.got), nil
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		}
	}
	if _, _, err := call(ctx, -1); err != nil {
		stop()
		return nil, nil, err
	}
	return call, stop, nil
}

// Foreground measures n timed questions answered in time, each half
// beside a core request-reply timed just before it. Issue 3's targets:
// each at most 3× the round trip, p99 under 2 ms.
func Foreground(ctx context.Context, call Call, roundTrip Timed, n int) ([]Row, error) {
	if n < 1 {
		return nil, holdover.Newf(holdover.CodeBadRequest, "measure at least one call, not %d", n)
	}
	deliver := Row{Key: "deliver", Name: "askTimed → Client delivery", RawName: "core request-reply"}
	answer := Row{Key: "answer", Name: "Client answer → result at the agent", RawName: "core request-reply"}
	for i := range n {
		raw, err := roundTrip(ctx)
		if err != nil {
			return nil, err
		}
		d, a, err := call(ctx, i)
		if err != nil {
			return nil, err
		}
		deliver.Raw, deliver.Path = append(deliver.Raw, raw), append(deliver.Path, d)
		answer.Raw, answer.Path = append(answer.Raw, raw), append(answer.Path, a)
	}
	return []Row{deliver, answer}, nil
}

// Questions are what every measured call asks, one single-choice question,
// and Answers answer them (the first option); the raw primitives carry
// the same, so both move as many bytes.
var Questions = []holdover.Question{{ID: "q1", Question: "Ship it?", Options: []holdover.Option{{Label: "yes"}, {Label: "no"}}}}

var Answers = []holdover.Answer{{ID: "q1", Selected: []string{"yes"}}}

// autoAnswer is a Client that answers every request the moment it is
// delivered, and tells when it got it.
type autoAnswer struct{ answered chan answered }

type answered struct {
	got time.Time
	err error
}

func (a *autoAnswer) Request(d *answerer.Delivery) {
	got := time.Now()
	err := d.Settle(Answers)
	select {
	case a.answered <- answered{got: got, err: err}:
	default: // a request nobody waits for: the measurement has ended
	}
}

func (a *autoAnswer) Cancel(*answerer.Delivery, string) {}
