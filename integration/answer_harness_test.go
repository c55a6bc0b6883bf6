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
	env := embeddedtest.Start(t, streams.Config{Memory: true})
	return &answerWorld{t: t, env: env, log: sessionlog.New(env.JS, env.Topology.Sessions)}
}

// worker starts a userQuestions service on a connection of its own.
func (w *answerWorld) worker() *worker.Service {
	nc, js := embeddedtest.Connect(w.t, w.env.Server.ClientURL())
	svc := worker.New(nc, js, w.env.Topology, worker.Config{}, slog.New(slog.DiscardHandler))
	require.NoError(w.t, svc.Start(context.Background()))
	w.t.Cleanup(svc.Stop)
	return svc
}

// client returns a service client on a connection of its own.
func (w *answerWorld) client() *caller.Client {
	nc, _ := embeddedtest.Connect(w.t, w.env.Server.ClientURL())
	return newCaller(w.t, nc, caller.Config{CallTimeout: 30 * time.Second})
}

// inboxOf reads every message queued for Session sid, as a runtime would.
func (w *answerWorld) inboxOf(sid string) []inbox.Queued {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	subject, err := inbox.Subject(sid)
	require.NoError(w.t, err)
	info, err := w.env.Topology.Inbox.Info(ctx, jetstream.WithSubjectFilter(subject))
	require.NoError(w.t, err)
	want := int(info.State.Subjects[subject])
	cons, err := inbox.Open(ctx, w.env.Topology.Inbox, sid, 0)
	require.NoError(w.t, err)
	var out []inbox.Queued
	for len(out) < want {
		batch, err := cons.Fetch(want-len(out), jetstream.FetchMaxWait(5*time.Second))
		require.NoError(w.t, err)
		for m := range batch.Messages() {
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
