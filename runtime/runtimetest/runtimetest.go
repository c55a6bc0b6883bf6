// Package runtimetest reads and waits on real Session logs for tests of
// the agent runtime, and gives them a model that remembers what it was
// asked. It owns no server and no runtime: the tests that use it start
// those (with embeddedtest) and hand it their sessionlog.
package runtimetest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/runtime/model"
	"github.com/holdover-dev/holdover/sessionlog"
)

// Logs reads Session logs through sessionlog and waits for them to reach
// a state, failing the test when one never does.
type Logs struct {
	t        testing.TB
	ctx      context.Context
	log      *sessionlog.Log
	patience time.Duration
}

// NewLogs reads log with ctx. Patience bounds every wait for something
// that must happen; it only turns a hang into a failure.
func NewLogs(t testing.TB, ctx context.Context, log *sessionlog.Log, patience time.Duration) *Logs {
	return &Logs{t: t, ctx: ctx, log: log, patience: patience}
}

// Events reads Session sid's whole log; any event it cannot decode fails
// the test.
func (l *Logs) Events(sid string) []events.Event {
	l.t.Helper()
	evts, bad, err := l.log.Read(l.ctx, sid, 0)
	if err != nil {
		l.t.Fatalf("read the log of %s: %v", sid, err)
	}
	if len(bad) > 0 {
		l.t.Fatalf("the log of %s holds %d events that do not decode: %v", sid, len(bad), bad)
	}
	return evts
}

// Await waits until Session sid's log satisfies done, and returns it.
// What names the awaited state in the failure message.
func (l *Logs) Await(sid, what string, done func([]events.Event) bool) []events.Event {
	l.t.Helper()
	deadline := time.Now().Add(l.patience)
	for {
		evts := l.Events(sid)
		switch {
		case done(evts):
			return evts
		case time.Now().After(deadline):
			l.t.Fatalf("waited %s for %s; the log is:\n%s", l.patience, what, Describe(evts))
		}
		time.Sleep(2 * time.Millisecond) // poll the log; JetStream reads are cheap
	}
}

// AwaitCount waits until Session sid's log holds n events of type typ.
func (l *Logs) AwaitCount(sid string, typ events.Type, n int) []events.Event {
	l.t.Helper()
	return l.Await(sid, fmt.Sprintf("%d %s events", n, typ), func(evts []events.Event) bool { return Count(evts, typ) >= n })
}

// Count is how many events of type typ a log holds.
func Count(evts []events.Event, typ events.Type) int {
	n := 0
	for _, e := range evts {
		if e.Type == typ {
			n++
		}
	}
	return n
}

// Types lists the event types of a log, in order.
func Types(evts []events.Event) []events.Type {
	out := make([]events.Type, len(evts))
	for i, e := range evts {
		out[i] = e.Type
	}
	return out
}

// IndexOf is the index of the first event of type typ, or -1.
func IndexOf(evts []events.Event, typ events.Type) int {
	for i, e := range evts {
		if e.Type == typ {
			return i
		}
	}
	return -1
}

// Last returns the body of the last event of type B, failing the test if
// the log has none.
func Last[B events.Body](t testing.TB, evts []events.Event) B {
	t.Helper()
	for i := len(evts) - 1; i >= 0; i-- {
		if b, ok := evts[i].Body.(B); ok {
			return b
		}
	}
	var zero B
	t.Fatalf("no %T in the log:\n%s", zero, Describe(evts))
	return zero
}

// Describe prints a log one event a line for failure messages. Request
// headers are elided: their tool schemas would drown the rest.
func Describe(evts []events.Event) string {
	var b strings.Builder
	for _, e := range evts {
		data := string(e.Data)
		if e.Type == events.TypeRequestHeader {
			data = "…"
		}
		fmt.Fprintf(&b, "  %d %s %s\n", e.Seq, e.Type, data)
	}
	return b.String()
}

// Spy is a model that remembers every request it answered. When Hold is
// set (before the agent runs), each answer waits until Hold is closed.
type Spy struct {
	model.Model
	Hold     chan struct{}
	mu       sync.Mutex
	requests []model.Request
}

// Complete records req and answers it with the wrapped model.
func (s *Spy) Complete(ctx context.Context, req model.Request) (model.Response, error) {
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.mu.Unlock()
	if s.Hold != nil {
		select {
		case <-s.Hold:
		case <-ctx.Done():
			return model.Response{}, ctx.Err()
		}
	}
	return s.Model.Complete(ctx, req)
}

// Last is the latest request.
func (s *Spy) Last() model.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[len(s.requests)-1]
}

// Count is how many requests the model answered.
func (s *Spy) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}
