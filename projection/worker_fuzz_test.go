package projection_test

import (
	"context"
	"log/slog"
	"strconv"
	"testing"

	"github.com/nats-io/nats.go"
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

// FuzzWorkerFoldsAnyStoredMessage stores arbitrary bytes as a Session's
// event, as a buggy or hostile writer could, and requires that the worker
// moves the Session past it and stores exactly the fold of the log: bad
// input is passed over, never a crash or a stuck Session.
func FuzzWorkerFoldsAnyStoredMessage(f *testing.F) {
	for _, seed := range []string{
		`{"type":"request/header","at":"2026-01-01T00:00:00Z","data":{"tools":[{"name":"ask_user_question","inputSchema":{"type":"object","properties":{"timeout":{}}}}]}}`,
		`{"type":"tool/call","at":"2026-01-01T00:00:00Z","data":{"callId":"c","name":"ask_user_question","arguments":{"questions":[{"id":"q","question":"?"}],"timeout":30}}}`,
		`{"type":"tool/result","at":"2026-01-01T00:00:00Z","data":{"callId":"c","content":[{"type":"text","text":"{\"pending\":true}"}]}}`,
		`{"type":"user/message","at":"2026-01-01T00:00:00Z","data":{"message":{"id":"m","role":"user","content":[],"source":{"kind":"user-question-reply","callId":"c","outcome":"answered"}}}}`,
		`{"type":"future/thing","data":{}}`,
		`{"type":"tool/call","data":null}`,
		`{"type":"","data":{}}`,
		`not json`,
		`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`,
		``,
	} {
		f.Add([]byte(seed))
	}
	env := embeddedtest.Start(f, streams.Config{Memory: true})
	store := projection.NewStore(env.JS, env.Topology.Sessions, env.Topology.Questions)
	w := projection.NewWorker(store, inbox.NewReplies(env.JS, env.Topology.Sessions, nil), projection.WorkerConfig{Logger: slog.New(slog.DiscardHandler)})
	opstest.Start(f, ops.Component{Name: "projection", Run: w.Run})

	n := 0
	f.Fuzz(func(t *testing.T, data []byte) {
		n++
		sid := "fuzz-" + strconv.Itoa(n)
		subject, err := streams.EventsSubject(sid)
		require.NoError(t, err)
		msg := nats.NewMsg(subject)
		msg.Data = data
		msg.Header.Set(sessionlog.PrevHeader, "0")
		ack, err := env.JS.PublishMsg(context.Background(), msg, jetstream.WithExpectLastSequencePerSubject(0))
		if err != nil {
			t.Skipf("not storable: %v", err) // over the payload limit
		}
		watchFolded(t, env.Topology.Questions, sid, ack.Sequence)
		stored, folded, equal, err := store.Check(context.Background(), sid)
		require.NoError(t, err)
		require.True(t, equal, "stored %+v, folded %+v", stored, folded)
		require.Equal(t, ack.Sequence, stored.LastSeq)
	})
}
