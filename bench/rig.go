package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/answerer"
	"github.com/holdover-dev/holdover/askuser"
	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/caller"
	"github.com/holdover-dev/holdover/embedded"
	"github.com/holdover-dev/holdover/inbox"
	"github.com/holdover-dev/holdover/liveroot"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/sessionlog"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/worker"
)

// Config says what a Rig measures against.
type Config struct {
	// NATS lists the servers to measure, comma separated. Empty starts an
	// embedded server with authentication on (fresh credentials) and its
	// JetStream files in a temporary folder, and provisions the topology
	// there; a deployment's topology is looked up and never changed.
	NATS string
	// CredsDir is the folder `holdover auth init` wrote: every part
	// connects on its own role's credentials from tenants/<Tenant>/, as
	// separate processes would (the raw primitives on admin's). Empty
	// connects without credentials, to a server without authentication.
	CredsDir string
	// Tenant is the tenant whose credentials are used; empty means
	// auth.DefaultTenant.
	Tenant string
	// Worker runs a question worker (the projection and the userQuestions
	// service) in this process. One always runs against the embedded
	// server; against a deployment its own workers answer unless this is
	// set, and then this one shares the work with them.
	Worker bool
	// Logger receives the parts' warnings; nil discards them.
	Logger *slog.Logger
}

// A Rig is what the measurements run on: connections to NATS (one per
// part, each on its role's credentials), the topology, and an agent
// instance holding a root lease, under which the measured Sessions are
// registered. Sessions are named bench-<run>-…, so a run against a
// deployment never touches anyone else's.
type Rig struct {
	cfg      Config
	url      string
	own      bool // the Rig started the server
	log      *slog.Logger
	run      string
	instance string

	top       *streams.Topology
	admin     *nats.Conn // the raw primitives, and cleaning up on a deployment
	adminJS   jetstream.JetStream
	calls     *caller.Client
	roots     *liveroot.Registry
	logs      *sessionlog.Log
	store     *projection.Store
	tool      *askuser.Tool
	answering *answerer.Client

	mu      sync.Mutex
	undo    []func() // in reverse on Close
	closing atomic.Bool
	fanOuts atomic.Int64 // FanOut measurements so far, naming each one's Sessions
}

// untilClosed passes the parts' records on until the Rig closes, and only
// errors from then on: stopping a worker cancels the background work the
// measurement left it (a late answer's follow-up, say), and each piece
// would say so.
type untilClosed struct {
	slog.Handler
	closing *atomic.Bool
}

func (h untilClosed) Enabled(ctx context.Context, l slog.Level) bool {
	return (l >= slog.LevelError || !h.closing.Load()) && h.Handler.Enabled(ctx, l)
}

func (h untilClosed) WithAttrs(attrs []slog.Attr) slog.Handler {
	return untilClosed{Handler: h.Handler.WithAttrs(attrs), closing: h.closing}
}

func (h untilClosed) WithGroup(name string) slog.Handler {
	return untilClosed{Handler: h.Handler.WithGroup(name), closing: h.closing}
}

// Start connects (starting an embedded server when cfg names none), looks
// up or provisions the topology, starts a worker when asked, and holds
// the agent's root lease.
func Start(ctx context.Context, cfg Config) (_ *Rig, err error) {
	if cfg.Tenant == "" {
		cfg.Tenant = auth.DefaultTenant
	}
	r := &Rig{cfg: cfg, url: cfg.NATS, run: newRun()}
	parts := slog.DiscardHandler
	if cfg.Logger != nil {
		parts = cfg.Logger.Handler()
	}
	r.log = slog.New(untilClosed{Handler: parts, closing: &r.closing})
	r.instance = "bench-" + r.run
	defer func() {
		if err != nil {
			r.Close()
		}
	}()
	r.own = cfg.NATS == ""
	if r.own {
		if err := r.startServer(); err != nil {
			return nil, err
		}
		r.cfg.Worker = true
	}
	if r.admin, r.adminJS, err = r.Connect(auth.Admin, "admin"); err != nil {
		return nil, err
	}
	if r.own {
		r.top, err = streams.Provision(ctx, r.adminJS, streams.Config{})
	} else {
		r.top, err = streams.Open(ctx, r.adminJS)
	}
	if err != nil {
		return nil, err
	}
	r.store = projection.NewStore(r.adminJS, r.top.Sessions, r.top.Questions)
	if r.cfg.Worker {
		if err := r.startWorker(ctx); err != nil {
			return nil, err
		}
	}
	if err := r.startAgent(ctx); err != nil {
		return nil, err
	}
	gw, _, err := r.Connect(auth.Gateway, "gateway")
	if err != nil {
		return nil, err
	}
	if r.answering, err = answerer.New(gw, answerer.Config{Log: r.log}); err != nil {
		return nil, err
	}
	r.later(func() { _ = r.answering.Close() })
	return r, nil
}

// newRun names one run: short, random, a valid Session id part.
func newRun() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// startServer starts the embedded server with authentication on, on
// credentials made for this run, which Connect then uses.
func (r *Rig) startServer() error {
	dir, err := os.MkdirTemp("", "holdover-bench-")
	if err != nil {
		return holdover.Wrap(err, holdover.CodeInternal, "make a folder for the embedded server's JetStream files")
	}
	r.later(func() { _ = os.RemoveAll(dir) })
	setup, err := auth.Init(filepath.Join(dir, "auth"))
	if err != nil {
		return err
	}
	r.cfg.CredsDir = setup.Dir()
	srv, err := embedded.Start(embedded.Options{StoreDir: filepath.Join(dir, "jetstream"), Name: "holdover-bench", MaxConsumers: -1, Auth: setup})
	if err != nil {
		return holdover.Wrap(err, holdover.CodeInternal, "start the embedded NATS server")
	}
	r.later(srv.Stop)
	r.url = srv.ClientURL()
	return nil
}

// startWorker runs the projection worker and the userQuestions service,
// each on a worker's connection of its own, until Close.
func (r *Rig) startWorker(ctx context.Context) error {
	_, foldJS, foldTop, err := r.part(ctx, auth.Worker, "projection")
	if err != nil {
		return err
	}
	store := projection.NewStore(foldJS, foldTop.Sessions, foldTop.Questions)
	nc, js, top, err := r.part(ctx, auth.Worker, "userquestions")
	if err != nil {
		return err
	}
	// In the order of a question worker process (cmd/internal/questionworker).
	folder := projection.NewWorker(store, inbox.NewReplies(foldJS, foldTop.Sessions, store), projection.WorkerConfig{Logger: r.log})
	svc := worker.New(nc, js, top, worker.Config{Views: store}, r.log)
	for _, c := range []ops.Component{{Name: "projection", Run: folder.Run}, {Name: "userQuestions", Run: svc.Run}} {
		running, err := ops.Start(ctx, c)
		if err != nil {
			return err
		}
		r.later(func() { _ = running.Stop() })
	}
	return nil
}

// startAgent opens what an agent runtime holds, on the agent's
// credentials: its caller, its root lease, the Session log and the
// live-root registry.
func (r *Rig) startAgent(ctx context.Context) error {
	nc, js, top, err := r.part(ctx, auth.Agent, "agent")
	if err != nil {
		return err
	}
	r.roots = liveroot.New(top.Roots)
	r.logs = sessionlog.New(js, top.Sessions)
	// The lease ends within its release bound once the connection
	// closes, as a runtime's does: the agent's rights do not delete it.
	if _, err := liveroot.HoldLease(ctx, nc, js, r.instance, 0); err != nil {
		return err
	}
	if r.calls, err = caller.New(ctx, nc, caller.Config{Log: r.log}); err != nil {
		return err
	}
	r.later(func() { _ = r.calls.Close() })
	r.tool, err = askuser.New(askuser.Config{Mode: askuser.ModeTimed}, r.calls)
	return err
}

// Connect opens a connection of its own to the measured NATS on role's
// credentials (none when the Rig has no credentials folder), named for
// part, closed with the Rig.
func (r *Rig) Connect(role auth.Role, part string) (*nats.Conn, jetstream.JetStream, error) {
	nc, js, err := r.dial(role, part)
	if err != nil {
		return nil, nil, err
	}
	r.later(nc.Close)
	return nc, js, nil
}

// dial connects as Connect does and leaves the closing to the caller: a
// measurement that opens a connection for each of its Clients closes
// them when it ends, not with the Rig.
func (r *Rig) dial(role auth.Role, part string) (*nats.Conn, jetstream.JetStream, error) {
	cfg := ops.NATSConfig{URL: r.url}
	if r.cfg.CredsDir != "" {
		cfg.Creds = filepath.Join(r.cfg.CredsDir, "tenants", r.cfg.Tenant, string(role)+".creds")
	}
	return cfg.Connect("holdover-bench-"+part, r.log)
}

// part connects a part of the system as Connect does, and looks up the
// topology as that part's credentials see it.
func (r *Rig) part(ctx context.Context, role auth.Role, name string) (*nats.Conn, jetstream.JetStream, *streams.Topology, error) {
	nc, js, err := r.Connect(role, name)
	if err != nil {
		return nil, nil, nil, err
	}
	top, err := streams.Open(ctx, js)
	if err != nil {
		return nil, nil, nil, err
	}
	return nc, js, top, nil
}

// URL is where the measured NATS is: the embedded server's address when
// the Rig started one.
func (r *Rig) URL() string { return r.url }

// Session names the i-th Session of a measurement: bench-<run>-<kind>-<i>.
func (r *Rig) Session(kind string, i int) string {
	return "bench-" + r.run + "-" + kind + "-" + strconv.Itoa(i)
}

// live makes the Rig's agent instance the live root of sid, as a runtime
// that opens the Session does, and returns the reference its calls carry.
func (r *Rig) live(ctx context.Context, sid string) (*holdover.AgentRef, error) {
	epoch, err := r.roots.Register(ctx, sid, r.instance)
	if err != nil {
		return nil, err
	}
	return &holdover.AgentRef{Instance: r.instance, Epoch: epoch}, nil
}

// later runs f on Close, before what was registered earlier.
func (r *Rig) later(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.undo = append(r.undo, f)
}

// Close stops what Start started and closes every connection, the last
// made first.
func (r *Rig) Close() {
	r.closing.Store(true)
	r.mu.Lock()
	undo := r.undo
	r.undo = nil
	r.mu.Unlock()
	for i := len(undo) - 1; i >= 0; i-- {
		undo[i]()
	}
}
