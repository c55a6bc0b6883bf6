package ops

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
)

// Component is one long-running part of a process: the metrics server,
// the projection worker, the question service, the gateway, the notifier,
// an agent runtime. Every one has the same lifecycle, Run:
//
//   - Run serves until ctx ends, then releases what it holds and returns
//     nil; a component that cannot go on returns its failure.
//   - Run calls ready once it serves, so that what relies on it may
//     start: [Run] starts the next component only then.
//   - A return before ctx ends is a failure, even a nil one
//     ([ErrStoppedEarly]): a process whose part stopped serves nothing,
//     so it exits non-zero and its supervisor restarts it.
//
// What a component owns and opens for itself (connections, clients,
// readers) it releases before Run returns; what outlives a Run is closed
// with Close.
type Component struct {
	Name string
	Run  func(ctx context.Context, ready func()) error
}

// ErrStoppedEarly is the failure of a component whose Run returned nil
// before it was asked to stop.
var ErrStoppedEarly = errors.New("stopped before it was asked to")

// Started is a component running in the background ([Start]).
type Started struct {
	name     string
	cancel   context.CancelFunc
	stopping atomic.Bool
	done     chan struct{}
	err      error // set before done is closed
}

// Start runs c in the background and returns once it is ready. ctx bounds
// the start only: the component runs until Stop. A component that fails
// or returns before it is ready is a failure; so is ctx ending first,
// which stops it.
func Start(ctx context.Context, c Component) (*Started, error) {
	s, ready := launch(ctx, c, nil)
	select {
	case <-ready:
		return s, nil
	case <-s.done:
		return nil, s.err
	case <-ctx.Done():
		_ = s.Stop() // asked to stop before it was ready
		return nil, context.Cause(ctx)
	}
}

// launch runs c on a goroutine of its own, with ctx's values but a
// cancellation of its own (Stop), and returns it with the channel its
// ready closes. When its Run returns it tells exited, if not nil, which
// has room.
func launch(ctx context.Context, c Component, exited chan<- *Started) (*Started, <-chan struct{}) {
	run, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &Started{name: c.Name, cancel: cancel, done: make(chan struct{})}
	ready := make(chan struct{})
	var once sync.Once
	go func() {
		err := c.Run(run, func() { once.Do(func() { close(ready) }) })
		switch stopping := s.stopping.Load(); {
		case !stopping && err == nil:
			err = ErrStoppedEarly
		case stopping && errors.Is(err, context.Canceled):
			err = nil
		}
		if err != nil {
			err = fmt.Errorf("%s: %w", c.Name, err)
		}
		s.err = err
		if exited != nil {
			exited <- s
		}
		close(s.done)
	}()
	return s, ready
}

// Name is the component's name.
func (s *Started) Name() string { return s.name }

// Done is closed once the component's Run has returned.
func (s *Started) Done() <-chan struct{} { return s.done }

// Stop ends the component's context and waits for its Run to return. It
// returns the component's failure: what Run returned (a cancellation it
// was asked for is none), or [ErrStoppedEarly] for a nil return before
// Stop. Stopping again returns the same.
func (s *Started) Stop() error {
	s.stopping.Store(true)
	s.cancel()
	<-s.done
	return s.err
}

// Run starts components in order, each once the one before it is ready,
// and keeps them running until ctx ends or one of them returns. Then it
// stops them in the reverse order, each after the ones that may rely on
// it, so nothing outlives the call. It returns the first failure (an
// early return is one, [ErrStoppedEarly]), or nil when ctx ended.
func Run(ctx context.Context, logger *slog.Logger, components ...Component) error {
	exited := make(chan *Started, len(components))
	var (
		running []*Started
		failure error
	)
	failed := func(s *Started) {
		failure = s.err
		logger.Error("component failed; stopping the process", "component", s.name, Err(s.err))
	}
	for _, c := range components {
		s, ready := launch(ctx, c, exited)
		running = append(running, s)
		select {
		case <-ready:
			logger.Info("started", "component", c.Name)
			continue
		case e := <-exited: // this one, or one started before it
			failed(e)
		case <-ctx.Done():
		}
		break
	}
	if failure == nil && ctx.Err() == nil && len(running) == len(components) {
		select {
		case e := <-exited:
			failed(e)
		case <-ctx.Done():
		}
	}
	for i := len(running) - 1; i >= 0; i-- {
		s := running[i]
		if err := s.Stop(); err != nil && !errors.Is(err, failure) {
			logger.Error("component failed while stopping", "component", s.name, Err(err))
			failure = errors.Join(failure, err)
			continue
		}
		logger.Info("stopped", "component", s.name)
	}
	return failure
}
