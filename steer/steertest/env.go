package steertest

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/inbox"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/ops/opstest"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/sessionlog"
	"github.com/holdover-dev/holdover/streams"
)

// Env is a real embedded server with the Session log, the projection and
// the late replies on it: what a late answer and the projection worker
// that marks its reply's reservation work on (D6, D8).
type Env struct {
	*embeddedtest.Env
	Log     *sessionlog.Log
	Views   *projection.Store
	Replies *inbox.Replies
}

// Start starts an Env on an in-memory server that stops when the test ends.
func Start(t testing.TB) *Env {
	env := embeddedtest.Start(t, streams.Config{Memory: true})
	views := projection.NewStore(env.JS, env.Topology.Sessions, env.Topology.Questions)
	return &Env{
		Env:     env,
		Log:     sessionlog.New(env.JS, env.Topology.Sessions),
		Views:   views,
		Replies: inbox.NewReplies(env.JS, env.Topology.Sessions, views),
	}
}

// RunWorker runs a projection worker, which writes the Views and the
// reservation markers, until stop is called or the test ends, whichever
// comes first; either way its Run must end without an error.
func (e *Env) RunWorker(t testing.TB) (stop func()) {
	w := projection.NewWorker(e.Views, e.Replies, projection.WorkerConfig{Logger: slog.New(slog.DiscardHandler)})
	running := opstest.Start(t, ops.Component{Name: "projection", Run: w.Run})
	return func() {
		if err := running.Stop(); err != nil {
			t.Fatalf("projection worker: %v", err)
		}
	}
}

// Queued reads every message stream (SESSIONS) holds for Session sid's
// inbox, on its own subject and its reply subjects, in order, passing over
// reservation markers as a runtime does.
func Queued(t testing.TB, stream jetstream.Stream, sid string) []inbox.Queued {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	subjects, err := streams.InboxSubjects(sid)
	require.NoError(t, err)
	want := 0
	for _, subject := range subjects {
		info, err := stream.Info(ctx, jetstream.WithSubjectFilter(subject))
		require.NoError(t, err)
		for _, n := range info.State.Subjects {
			want += int(n)
		}
	}
	if want == 0 {
		return nil
	}
	cons, err := inbox.Open(ctx, stream, sid, 0)
	require.NoError(t, err)
	var out []inbox.Queued
	for read := 0; read < want; {
		batch, err := cons.Fetch(want-read, jetstream.FetchMaxWait(5*time.Second))
		require.NoError(t, err)
		for m := range batch.Messages() {
			read++
			if inbox.IsMarker(m.Headers()) {
				continue
			}
			q, err := inbox.DecodeMsg(m)
			require.NoError(t, err)
			out = append(out, q)
		}
		require.NoError(t, batch.Error())
	}
	return out
}
