package worker

import (
	"context"
	"sync"
	"time"
)

// runnerIdle is how long a runner that has served a request waits for the
// next before it ends.
const runnerIdle = time.Second

// runners are the goroutines that serve requests. A runner that has
// served one waits a while for the next, and the handler hands it over
// instead of starting a goroutine: a new goroutine starts with a small
// stack, and growing it while the request is decoded and the reply
// encoded cost a late answer about a twentieth of its time (issue 11).
// How many requests run at once is still the handler's slots' business.
type runners struct {
	next chan func() // an idle runner receives here
	wg   sync.WaitGroup
}

func newRunners() *runners { return &runners{next: make(chan func())} }

// run runs job on an idle runner, or on a new one when none is idle.
// Runners end once idle for runnerIdle or when ctx ends.
func (r *runners) run(ctx context.Context, job func()) {
	select {
	case r.next <- job:
		return
	default:
	}
	r.wg.Go(func() {
		idle := time.NewTimer(runnerIdle)
		defer idle.Stop()
		for {
			job()
			idle.Reset(runnerIdle)
			select {
			case job = <-r.next:
			case <-idle.C:
				return
			case <-ctx.Done():
				return
			}
		}
	})
}

// wait waits until every runner has ended: after ctx ended, once their
// jobs return.
func (r *runners) wait() { r.wg.Wait() }
