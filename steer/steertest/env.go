package steertest

import (
	"context"
	"testing"

	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/inbox"
	"github.com/holdover-dev/holdover/sessionlog"
	"github.com/holdover-dev/holdover/streams"
)

// Env is a real embedded server with the Session log and the inbox
// reservations on it: what a late answer and the Tracker that follows its
// reply work on (D6, D8).
type Env struct {
	*embeddedtest.Env
	Log          *sessionlog.Log
	Reservations *inbox.Reservations
}

// Start starts an Env on an in-memory server that stops when the test ends.
func Start(t testing.TB) *Env {
	env := embeddedtest.Start(t, streams.Config{Memory: true})
	log := sessionlog.New(env.JS, env.Topology.Sessions)
	return &Env{Env: env, Log: log, Reservations: inbox.NewReservations(env.Topology.Reservations, log)}
}

// RunTracker runs a reservation Tracker until stop is called or the test
// ends, whichever comes first; either way its Run must end without an
// error.
func (e *Env) RunTracker(t testing.TB) (tr *inbox.Tracker, stop func()) {
	tr = inbox.NewTracker(e.Reservations, e.Topology.Sessions, e.Log, inbox.TrackerConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tr.Run(ctx) }()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("tracker: %v", err)
			}
		}
	}
	t.Cleanup(stop)
	return tr, stop
}
