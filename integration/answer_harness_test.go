package integration

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/answerer"
	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/caller"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/inbox"
	"github.com/holdover-dev/holdover/liveroot"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/ops/opstest"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/sessionlog"
	"github.com/holdover-dev/holdover/steer/steertest"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/worker"
)

// answerWorld is one embedded server with the topology, a Session log
// writer and question workers, for the late-answer path (D6–D8). It runs
// with authentication on: the log is written as an agent writes it,
// workers run on worker credentials, answers come through a gateway's.
type answerWorld struct {
	t   testing.TB
	env *embeddedtest.Env
	log *sessionlog.Log
}

func newAnswerWorld(t testing.TB) *answerWorld {
	return newAnswerWorldOn(t, streams.Config{Memory: true}, true)
}

// newAnswerWorldOn is newAnswerWorld with the topology stored as cfg says,
// and with authentication on or off, for benchmarks that measure what it
// costs.
func newAnswerWorldOn(t testing.TB, cfg streams.Config, secure bool) *answerWorld {
	start := embeddedtest.Start
	if secure {
		start = func(t testing.TB, cfg streams.Config) *embeddedtest.Env { return embeddedtest.StartSecure(t, cfg) }
	}
	env := start(t, cfg)
	w := &answerWorld{t: t, env: env}
	_, js := env.As(t, auth.Agent)
	w.log = sessionlog.New(js, w.open(js).Sessions)
	return w
}

// creds is role r's credentials file, for a process of that role.
func (w *answerWorld) creds(r auth.Role) string { return w.env.Auth.Creds(w.env.Tenant, r) }

// open looks the topology up as js's credentials see it.
func (w *answerWorld) open(js jetstream.JetStream) *streams.Topology {
	top, err := streams.Open(context.Background(), js)
	require.NoError(w.t, err)
	return top
}

// worker starts what a question worker runs, each on a connection of its
// own with worker credentials: the userQuestions service and a projection
// worker, which writes the Views and the reply reservations' markers (D8).
func (w *answerWorld) worker() *runningWorker { return w.startWorker(true) }

// readingWorker is worker with the service apart from the projection
// worker's Views, as in a process that runs no projection worker: its
// late answers read before they write, never the one write from a kept
// View, whatever the projection worker has proven by then.
func (w *answerWorld) readingWorker() *runningWorker { return w.startWorker(false) }

func (w *answerWorld) startWorker(keep bool) *runningWorker {
	_, folderJS := w.env.As(w.t, auth.Worker)
	folderTop := w.open(folderJS)
	store := projection.NewStore(folderJS, folderTop.Sessions, folderTop.Questions)
	nc, js := w.env.As(w.t, auth.Worker)
	cfg := worker.Config{Views: store}
	if !keep {
		cfg.Views = nil
	}
	svc := worker.New(nc, js, w.open(js), cfg, slog.New(slog.DiscardHandler))
	folder := projection.NewWorker(store, inbox.NewReplies(folderJS, folderTop.Sessions, nil), projection.WorkerConfig{Logger: slog.New(slog.DiscardHandler)})
	opstest.Start(w.t, ops.Component{Name: "projection", Run: folder.Run})
	return runWorker(w.t, svc)
}

// client returns a client that answers late, as a gateway does for its
// users, on a connection of its own with gateway credentials.
func (w *answerWorld) client() *answerer.Client {
	nc, _ := w.env.As(w.t, auth.Gateway)
	c, err := answerer.New(nc, answerer.Config{CallTimeout: 30 * time.Second})
	require.NoError(w.t, err)
	w.t.Cleanup(func() { require.NoError(w.t, c.Close()) })
	return c
}

// agent returns a client that asks, as an agent runtime does, with agent
// credentials.
func (w *answerWorld) agent() *caller.Client {
	nc, _ := w.env.As(w.t, auth.Agent)
	return newCaller(w.t, nc, caller.Config{CallTimeout: 30 * time.Second})
}

// roots is the live-root registry as agent runtimes write it.
func (w *answerWorld) roots() *liveroot.Registry {
	_, js := w.env.As(w.t, auth.Agent)
	return liveroot.New(w.open(js).Roots)
}

// inboxOf reads every message queued for Session sid, on its own inbox
// subject and its reply subjects, as a runtime would: markers passed over.
func (w *answerWorld) inboxOf(sid string) []inbox.Queued {
	return steertest.Queued(w.t, w.env.Topology.Sessions, sid)
}

// conn opens one more connection to the world's server.
func (w *answerWorld) conn() *nats.Conn {
	nc, _ := w.env.As(w.t, auth.Admin)
	return nc
}
