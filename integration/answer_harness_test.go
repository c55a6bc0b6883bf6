package integration

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/caller"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/inbox"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/sessionlog"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/worker"
)

// answerWorld is one embedded server with the topology, a Session log
// writer and question workers, for the late-answer path (D6–D8).
type answerWorld struct {
	t   testing.TB
	env *embeddedtest.Env
	log *sessionlog.Log
}

func newAnswerWorld(t testing.TB) *answerWorld {
	return newAnswerWorldOn(t, streams.Config{Memory: true})
}

// newAnswerWorldOn is newAnswerWorld with the topology stored as cfg says.
func newAnswerWorldOn(t testing.TB, cfg streams.Config) *answerWorld {
	env := embeddedtest.Start(t, cfg)
	return &answerWorld{t: t, env: env, log: sessionlog.New(env.JS, env.Topology.Sessions)}
}

// worker starts what a question worker runs, each on a connection of its
// own: the userQuestions service and a projection worker, which writes the
// Views and the reply reservations' markers (D8).
func (w *answerWorld) worker() *worker.Worker {
	_, folderJS := embeddedtest.Connect(w.t, w.env.Server.ClientURL())
	store := projection.NewStore(folderJS, w.env.Topology.Sessions, w.env.Topology.Questions)
	nc, js := embeddedtest.Connect(w.t, w.env.Server.ClientURL())
	svc := worker.New(nc, js, w.env.Topology, worker.Config{Views: store}, slog.New(slog.DiscardHandler))
	require.NoError(w.t, svc.Start(context.Background()))
	w.t.Cleanup(svc.Stop)
	folder := projection.NewWorker(store, inbox.NewReplies(folderJS, w.env.Topology.Inbox, nil), projection.WorkerConfig{Logger: slog.New(slog.DiscardHandler)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = folder.Run(ctx)
	}()
	w.t.Cleanup(func() { cancel(); <-done })
	return svc
}

// client returns a service client on a connection of its own.
func (w *answerWorld) client() *caller.Client {
	nc, _ := embeddedtest.Connect(w.t, w.env.Server.ClientURL())
	return newCaller(w.t, nc, caller.Config{CallTimeout: 30 * time.Second})
}

// inboxOf reads every message queued for Session sid, on its own inbox
// subject and its reply subjects, as a runtime would: markers passed over.
func (w *answerWorld) inboxOf(sid string) []inbox.Queued {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := w.env.Topology.Inbox.Info(ctx, jetstream.WithSubjectFilter("holdover.session."+sid+".>"))
	require.NoError(w.t, err)
	want := 0
	for _, n := range info.State.Subjects {
		want += int(n)
	}
	cons, err := inbox.Open(ctx, w.env.Topology.Inbox, sid, 0)
	require.NoError(w.t, err)
	var out []inbox.Queued
	for read := 0; read < want; {
		batch, err := cons.Fetch(want-read, jetstream.FetchMaxWait(5*time.Second))
		require.NoError(w.t, err)
		for m := range batch.Messages() {
			read++
			if inbox.IsMarker(m.Headers()) {
				continue
			}
			q, err := inbox.DecodeMsg(m)
			require.NoError(w.t, err)
			out = append(out, q)
		}
		require.NoError(w.t, batch.Error())
	}
	return out
}

// conn opens one more connection to the world's server.
func (w *answerWorld) conn() *nats.Conn {
	nc, _ := embeddedtest.Connect(w.t, w.env.Server.ClientURL())
	return nc
}
