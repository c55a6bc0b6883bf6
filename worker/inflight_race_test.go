package worker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
)

// C1, W3: a request listed in flight is complete, its reply subject
// included, even while the worker is publishing it: an answerer that
// starts watching just then (a gateway's new watch) reads the request as
// the worker writes it. Run with -race.
func TestInflightListsCompleteRequestsWhilePublishing(t *testing.T) {
	f := newFGTest(t)
	ctx := context.Background()
	agent := f.live("s1")
	const calls = 300

	stop := make(chan struct{})
	listed := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				listed <- nil
				return
			default:
			}
			reqs, err := f.agent.Inflight(ctx, "s1")
			if err != nil {
				listed <- err
				return
			}
			for _, r := range reqs {
				if r.Reply == "" {
					listed <- fmt.Errorf("request %s is listed without its reply subject", r.RequestID)
					return
				}
			}
		}
	}()
	for i := range calls {
		go func() {
			_, _ = f.agent.AskTimed(ctx, holdover.AskTimedRequest{Session: "s1", CallID: fmt.Sprintf("call-%d", i), Agent: agent, Questions: q1, TimeoutMs: 60_000})
		}()
	}
	require.Eventually(t, func() bool { return f.svc.LiveWaits() == calls }, 10*time.Second, time.Millisecond)
	close(stop)
	require.NoError(t, <-listed)
}
