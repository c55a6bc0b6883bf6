package worker

import (
	"context"
	"sync"
)

// lanes run jobs off the goroutine that hands them out (a subscription's,
// which delivers one message at a time): the jobs of one name in the
// order they came, on a goroutine of that name's own while it has any, so
// a slow job holds up no other name. Every job gets the lanes' context,
// which close cancels; close then waits for the jobs that run.
type lanes struct {
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	queued map[string][]func(context.Context) // a name is here while its goroutine runs
	closed bool
	jobs   sync.WaitGroup
}

func newLanes() *lanes {
	ctx, cancel := context.WithCancel(context.Background())
	return &lanes{ctx: ctx, cancel: cancel, queued: make(map[string][]func(context.Context))}
}

// do queues job on the lane of name, unless the lanes are closed.
func (l *lanes) do(name string, job func(ctx context.Context)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	q, running := l.queued[name]
	l.queued[name] = append(q, job)
	if !running {
		l.jobs.Go(func() { l.run(name) })
	}
}

// run runs the jobs of name until none is queued.
func (l *lanes) run(name string) {
	for {
		l.mu.Lock()
		q := l.queued[name]
		if len(q) == 0 {
			delete(l.queued, name)
			l.mu.Unlock()
			return
		}
		job := q[0]
		l.queued[name] = q[1:]
		l.mu.Unlock()
		job(l.ctx)
	}
}

// close cancels the jobs' context, drops the jobs not begun and waits for
// the ones that run. Jobs handed out afterwards are dropped.
func (l *lanes) close() {
	l.mu.Lock()
	l.closed = true
	for name := range l.queued {
		l.queued[name] = nil
	}
	l.mu.Unlock()
	l.cancel()
	l.jobs.Wait()
}
