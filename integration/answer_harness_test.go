package integration

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/inbox"
	"github.com/holdover-dev/holdover/liveroot"
	"github.com/holdover-dev/holdover/sessionlog"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/userquestions"
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

func newAnswerWorld(t testing.TB) *answerWorld { return newAnswerWorldAuth(t, true) }

// newAnswerWorldAuth is newAnswerWorld with authentication on or off, for
// benchmarks that measure what it costs.
func newAnswerWorldAuth(t testing.TB, secure bool) *answerWorld {
	start := embeddedtest.Start
	if secure {
		start = func(t testing.TB, cfg streams.Config) *embeddedtest.Env { return embeddedtest.StartSecure(t, cfg) }
	}
	env := start(t, streams.Config{Memory: true})
	w := &answerWorld{t: t, env: env}
	_, js := env.As(t, auth.Agent)
	w.log = sessionlog.New(js, w.open(js).Sessions)
	return w
}

// open looks the topology up as js's credentials see it.
func (w *answerWorld) open(js jetstream.JetStream) *streams.Topology {
	top, err := streams.Open(context.Background(), js)
	require.NoError(w.t, err)
	return top
}

// worker starts a userQuestions service on a connection of its own.
func (w *answerWorld) worker() *userquestions.Service {
	nc, js := w.env.As(w.t, auth.Worker)
	svc := userquestions.New(nc, js, w.open(js), userquestions.Config{}, slog.New(slog.DiscardHandler))
	require.NoError(w.t, svc.Start(context.Background()))
	w.t.Cleanup(svc.Stop)
	return svc
}

// client returns a service client that answers, as a gateway does for
// its users, on a connection of its own.
func (w *answerWorld) client() *userquestions.Client {
	nc, _ := w.env.As(w.t, auth.Gateway)
	return userquestions.NewClient(nc, 30*time.Second)
}

// agent returns a service client that asks, as an agent runtime does.
func (w *answerWorld) agent() *userquestions.Client {
	nc, _ := w.env.As(w.t, auth.Agent)
	return userquestions.NewClient(nc, 30*time.Second)
}

// roots is the live-root registry as agent runtimes write it.
func (w *answerWorld) roots() *liveroot.Registry {
	_, js := w.env.As(w.t, auth.Agent)
	return liveroot.New(w.open(js).Roots)
}

// inboxOf reads every message queued for Session sid, as a runtime would.
func (w *answerWorld) inboxOf(sid string) []inbox.Queued {
	return inboxOf(w.t, w.env.Topology.Inbox, sid)
}

// inboxOf reads every message of stream (INBOX) queued for Session sid.
func inboxOf(t testing.TB, stream jetstream.Stream, sid string) []inbox.Queued {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	subject, err := inbox.Subject(sid)
	require.NoError(t, err)
	info, err := stream.Info(ctx, jetstream.WithSubjectFilter(subject))
	require.NoError(t, err)
	want := int(info.State.Subjects[subject])
	cons, err := inbox.Open(ctx, stream, sid, 0)
	require.NoError(t, err)
	var out []inbox.Queued
	for len(out) < want {
		batch, err := cons.Fetch(want-len(out), jetstream.FetchMaxWait(5*time.Second))
		require.NoError(t, err)
		for m := range batch.Messages() {
			q, err := inbox.DecodeMsg(m)
			require.NoError(t, err)
			out = append(out, q)
		}
		require.NoError(t, batch.Error())
	}
	return out
}

// conn opens one more connection to the world's server.
func (w *answerWorld) conn() *nats.Conn {
	nc, _ := w.env.As(w.t, auth.Admin)
	return nc
}
