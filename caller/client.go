// Package caller is the calling side of the userQuestions service: the Go
// client an agent runtime asks its questions with (ask, askTimed), and
// that anyone calls the service's short endpoints with (answer, view,
// inflight). Every error it returns carries the code the worker sent,
// rebuilt as a *holdover.Error, so holdover.CodeOf works on this side too.
// It speaks the wire of package userquestions and never imports the worker.
package caller

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover"
	leases "github.com/holdover-dev/holdover/lease"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/userquestions"
)

// Config configures a Client. Its zero value is the defaults; New fills
// them in once, and nothing changes them afterwards.
type Config struct {
	// CallTimeout bounds a short call (answer, view, inflight) made with a
	// context that has no deadline; 0 means userquestions.DefaultCallTimeout.
	// Ask and AskTimed wait as long as their context lets them.
	CallTimeout time.Duration
	// ReleaseBound is the InactiveThreshold of the Client's caller lease:
	// how long a dead agent's waits outlive it. 0 means
	// userquestions.DefaultReleaseBound; values below
	// userquestions.MinReleaseBound are raised to it.
	ReleaseBound time.Duration
	// InflightGather: see userquestions.DefaultInflightGather; 0 means the default.
	InflightGather time.Duration
	// Log receives warnings; nil means slog.Default().
	Log *slog.Logger
}

// withDefaults fills in what cfg leaves zero.
func (cfg Config) withDefaults() Config {
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = userquestions.DefaultCallTimeout
	}
	cfg.ReleaseBound = leases.Bound(cfg.ReleaseBound)
	if cfg.InflightGather <= 0 {
		cfg.InflightGather = userquestions.DefaultInflightGather
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return cfg
}

// Client calls the userQuestions service. It holds one caller lease for
// all its ask and askTimed calls, from New to Close, so the worker ends the
// waits of an agent that dies (ASK_ABORTED); it watches the lease of each
// call's worker, so a worker that dies leaves no call hanging (ask.go).
type Client struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	cfg     Config
	log     *slog.Logger
	prefix  string // reply subjects of ask calls are prefix + call token
	mux     *nats.Subscription
	workers *leases.Watcher
	stop    func()

	mu     sync.Mutex
	closed bool
	lease  *leases.Lease
	calls  map[string]*pendingCall
}

// New returns a Client on nc, holding its caller lease and subscribed for
// its replies: every call it makes can be sent at once. ctx bounds the
// setup only. Close it when done.
func New(ctx context.Context, nc *nats.Conn, cfg Config) (*Client, error) {
	cfg = cfg.withDefaults()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, holdover.Wrap(err, holdover.CodeInternal, "jetstream")
	}
	c := &Client{
		nc:     nc,
		js:     js,
		cfg:    cfg,
		log:    cfg.Log,
		prefix: nc.NewInbox() + ".",
		calls:  make(map[string]*pendingCall),
	}
	if c.mux, err = nc.Subscribe(c.prefix+"*", c.onReply); err != nil {
		return nil, holdover.Wrap(err, holdover.CodeInternal, "subscribe for replies")
	}
	if c.lease, err = leases.Hold(ctx, nc, js, userquestions.RoleCaller, "", cfg.ReleaseBound); err != nil {
		_ = c.mux.Unsubscribe()
		return nil, err
	}
	// A caller's calls go to a few workers again and again: their leases
	// stay watched between calls, so the accepted frame costs no lookup
	// and the reply behind it waits for none.
	c.workers = leases.NewWatcher(nc, js, c.log, leases.KeepWatching)
	c.stop = leases.OnReconnect(nc, 0, c.resync)
	return c, nil
}

// Lease is the name of the Client's caller lease, which every ask and
// askTimed names in the Holdover-Caller-Lease header.
func (c *Client) Lease() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lease.Name()
}

// Close releases the Client: its lease ends, so the workers end the waits
// of calls still in progress with ASK_ABORTED, and so do those calls.
// Closing again does nothing.
func (c *Client) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	calls := slices.Collect(maps.Values(c.calls))
	lease := c.lease
	c.mu.Unlock()
	c.stop()
	c.workers.Close()
	// An agent may not delete consumers (package auth), so its lease ends
	// the release bound after this connection's interest in it. Each call
	// still in progress is abandoned instead, as a cancelled one is, so its
	// worker aborts its wait now, as the lease's deletion would have: at
	// once when the worker is known, else when the call's accepted frame
	// (sent right after the request) arrives, which the reply subscription
	// stays for, up to the release bound.
	var aborts sync.WaitGroup
	for _, pc := range calls {
		worker, id := c.abandon(pc, false)
		pc.end(holdover.New(holdover.CodeAskAborted, "the client was closed before the question was answered"))
		if worker != "" {
			aborts.Go(func() { c.sendAbort(worker, id) })
		}
	}
	aborts.Wait()
	lease.Drop()
	time.AfterFunc(c.cfg.ReleaseBound, func() { _ = c.mux.Unsubscribe() })
}

// View returns the Session's userQuestions projection, caught up to the
// Session's last event. (An agent never answers: the late answer is the
// answerer side's, package answerer.)
func (c *Client) View(ctx context.Context, sid string) (projection.View, error) {
	var out projection.View
	err := userquestions.Call(ctx, c.nc, c.cfg.CallTimeout, userquestions.OpView, userquestions.ViewRequest{Session: sid}, &out)
	return out, err
}

// Inflight lists the Session's live foreground requests across workers,
// for a Client that joins after they were published.
func (c *Client) Inflight(ctx context.Context, sid string) ([]userquestions.WaterfallRequest, error) {
	return userquestions.FetchInflight(ctx, c.nc, sid, c.cfg.InflightGather)
}
