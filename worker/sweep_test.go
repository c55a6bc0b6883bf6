package worker_test

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/ops/opstest"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/worker"
)

// The worker deletes the consumers the server would not end soon after
// their last use, once they have been idle for its bound: a durable that
// no role shares and no admin declared, on any stream, and an ephemeral
// whose inactive threshold is longer than the bound. It keeps the shared
// and declared durables however idle, and anything in use (a pull
// waiting).
func TestTheWorkerDeletesIdleConsumersThatOutliveTheirReaders(t *testing.T) {
	env := embeddedtest.Start(t, streams.Config{Memory: true})
	ctx := context.Background()
	_, err := streams.Provision(ctx, env.JS, streams.Config{Memory: true, Durables: []string{"replay"}})
	require.NoError(t, err)
	sessions, claims := env.Topology.Sessions, env.Topology.Claims
	views, err := env.JS.Stream(ctx, streams.KVStreamPrefix+streams.QuestionsBucket)
	require.NoError(t, err)
	create := func(s jetstream.Stream, cfg jetstream.ConsumerConfig) {
		t.Helper()
		cfg.AckPolicy = jetstream.AckNonePolicy
		_, err := s.CreateConsumer(ctx, cfg)
		require.NoError(t, err)
	}
	create(sessions, jetstream.ConsumerConfig{Durable: "stray"})
	create(sessions, jetstream.ConsumerConfig{Durable: streams.NotifyDurable})
	create(sessions, jetstream.ConsumerConfig{Durable: "replay"})
	create(sessions, jetstream.ConsumerConfig{Name: "lingering", InactiveThreshold: time.Hour})
	create(sessions, jetstream.ConsumerConfig{Name: "reading", InactiveThreshold: time.Hour})
	create(views, jetstream.ConsumerConfig{Durable: streams.NotifyDurable}) // a shared name counts on SESSIONS only
	create(claims, jetstream.ConsumerConfig{Durable: "stray-lease", FilterSubject: "holdover.claim.lease.caller.x"})
	reading, err := sessions.Consumer(ctx, "reading")
	require.NoError(t, err)
	_, err = reading.Fetch(1, jetstream.FetchMaxWait(time.Minute)) // a pull waits on it throughout
	require.NoError(t, err)

	m := ops.NewMetrics()
	svc := worker.New(env.Conn, env.JS, env.Topology, worker.Config{Metrics: m, ConsumerIdle: time.Second, SweepEvery: 50 * time.Millisecond}, slog.New(slog.DiscardHandler))
	opstest.Start(t, ops.Component{Name: "userQuestions", Run: svc.Run})

	names := func(s jetstream.Stream) []string {
		var out []string
		for n := range s.ConsumerNames(ctx).Name() {
			out = append(out, n)
		}
		slices.Sort(out)
		return out
	}
	require.Eventually(t, func() bool {
		return !slices.Contains(names(sessions), "stray") && !slices.Contains(names(sessions), "lingering") &&
			len(names(views)) == 0 && !slices.Contains(names(claims), "stray-lease")
	}, 10*time.Second, 20*time.Millisecond, "the idle consumers that outlive their readers were deleted")
	require.Equal(t, []string{streams.NotifyDurable, "reading", "replay", streams.RepliesDurable}, names(sessions))
	swept := func(stream string) float64 {
		return counted(t, m, "holdover_consumers_swept_total", map[string]string{"stream": stream})
	}
	require.Equal(t, 2.0, swept(streams.SessionsStream))
	require.Equal(t, 1.0, swept(streams.KVStreamPrefix+streams.QuestionsBucket))
	require.Equal(t, 1.0, swept(streams.ClaimsStream))
}
