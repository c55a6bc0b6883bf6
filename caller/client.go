// Package caller is the calling side of the userQuestions service: the Go
// client an agent runtime asks its questions with (ask, askTimed), and
// that anyone calls the service's short endpoints with (answer, view,
// inflight). Every error it returns carries the code the worker sent,
// rebuilt as a *holdover.Error, so holdover.CodeOf works on this side too.
// It speaks the wire of package userquestions and never imports the worker.
package caller

import (
	"context"
	"errors"
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
	// closing ends with Close, and with it the backstops' asks.
	closing context.Context
	cancel  context.CancelFunc

	mu     sync.Mutex
	closed bool
	lease  *leases.Lease
	calls  map[string]*pendingCall
	// left is closed once a closed Client has no call left registered.
	left     chan struct{}
	leftOnce sync.Once
	// background is the work of calls that ended (aborts, backstop asks),
	// which Close waits for; drained refuses more once it does.
	background sync.WaitGroup
	drained    bool
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
		left:   make(chan struct{}),
	}
	c.closing, c.cancel = context.WithCancel(context.Background())
	if c.mux, err = nc.Subscribe(c.prefix+"*", c.onReply); err != nil {
		return nil, holdover.Wrap(err, holdover.CodeInternal, "subscribe for replies")
	}
	if c.lease, err = leases.Hold(ctx, nc, js, userquestions.RoleCaller, "", cfg.ReleaseBound); err != nil {
		_ = c.mux.Unsubscribe()
		c.cancel()
		return nil, err
	}
	// A caller's calls go to a few workers again and again: their leases
	// stay watched between calls, so the accepted frame costs no lookup
	// and the reply behind it waits for none.
	c.workers = leases.NewWatcher(nc, js, c.log, leases.KeepWatching)
	c.stop = leases.OnReconnect(nc, 0, c.resync)
	closed := nc.StatusChanged(nats.CLOSED)
	c.background.Go(func() {
		defer nc.RemoveStatusListener(closed)
		if !nc.IsClosed() {
			select {
			case <-closed:
			case <-c.closing.Done():
				return
			}
		}
		c.connectionClosed()
	})
	return c, nil
}

// connectionClosed ends every call in progress once the Client's
// connection is closed for good: no reply can reach them.
func (c *Client) connectionClosed() {
	c.mu.Lock()
	calls := slices.Collect(maps.Values(c.calls))
	c.mu.Unlock()
	for _, pc := range calls {
		pc.end(holdover.Wrap(nats.ErrConnectionClosed, holdover.CodeInternal, "the agent's NATS connection closed before the question was answered"))
	}
}

// Lease is the name of the Client's caller lease, which every ask and
// askTimed names in the Holdover-Caller-Lease header.
func (c *Client) Lease() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lease.Name()
}

// Close releases the Client: its lease ends, so the workers end the waits
// of calls still in progress with ASK_ABORTED, and so do those calls. It
// returns once nothing of the Client runs: no abort, no backstop, no
// timer. Closing again does nothing.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	calls := slices.Collect(maps.Values(c.calls))
	lease := c.lease
	c.mu.Unlock()
	c.cancel()
	c.stop()
	c.workers.Close()
	// An agent may not delete consumers (package auth), so its lease ends
	// the release bound after this connection's interest in it. Each call
	// still in progress is abandoned instead, as a cancelled one is, so its
	// worker aborts its wait now, as the lease's deletion would have: at
	// once when the worker is known, else when the call's accepted frame
	// (sent right after the request) arrives, which the reply subscription
	// stays for, up to the release bound.
	for _, pc := range calls {
		c.abandon(pc) // before its end, which the waiting call would take as no abandon
		pc.end(holdover.New(holdover.CodeAskAborted, "the client was closed before the question was answered"))
	}
	lease.Drop()
	c.mu.Lock()
	c.leaveIfEmpty()
	c.mu.Unlock()
	<-c.left // each abandoned call leaves with its accepted frame, or its release bound
	err := c.mux.Unsubscribe()
	c.mu.Lock()
	c.drained = true
	c.mu.Unlock()
	c.background.Wait()
	if errors.Is(err, nats.ErrConnectionClosed) {
		return nil // a closed connection has nothing left to unsubscribe
	}
	return err
}

// leaveIfEmpty closes left once a closed Client has no call left. The
// caller holds c.mu.
func (c *Client) leaveIfEmpty() {
	if c.closed && len(c.calls) == 0 {
		c.leftOnce.Do(func() { close(c.left) })
	}
}

// track counts a goroutine of the Client's own (a backstop's timer) in
// the background Close waits for, and reports whether it may run; it
// calls background.Done when it ends.
func (c *Client) track() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.drained {
		return false
	}
	c.background.Add(1)
	return true
}

// goBackground runs fn on a goroutine Close waits for, and reports whether
// it did: after Close has drained them, nothing new starts.
func (c *Client) goBackground(fn func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.drained {
		return false
	}
	c.background.Go(fn)
	return true
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
