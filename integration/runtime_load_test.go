package integration

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/metrics"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/askuser"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/inbox"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/ops/opstest"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/runtime"
	"github.com/holdover-dev/holdover/runtime/model/scripted"
	"github.com/holdover-dev/holdover/sessionlog"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/worker"
)

// BenchmarkRuntimeSessions runs many Sessions in one runtime process, each
// asking one timed question (timeout 1 s) that no Client answers: every
// call ends pending, the agents go on with three independent steps (200 ms
// sleeps, real time) and end their Turn; then every question gets a late
// answer, which the agent admits at its next step boundary: at once when
// it is idle, after the running step otherwise. It reports the wall time of the whole
// run, the p50 and p99 latency from an accepted answer to its admission as
// user/message, and the process's Go heap. Run it once:
//
//	go test -run XXX -bench RuntimeSessions -benchtime 1x ./integration/
func BenchmarkRuntimeSessions(b *testing.B) {
	for _, sessions := range []int{100, 1000} {
		b.Run(fmt.Sprintf("sessions=%d", sessions), func(b *testing.B) {
			for range b.N {
				runSessions(b, sessions)
			}
		})
	}
}

func runSessions(b *testing.B, n int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env := embeddedtest.Start(b, streams.Config{Memory: true})
	quiet := slog.New(slog.DiscardHandler)
	workerConn, workerJS := embeddedtest.Connect(b, env.Server.ClientURL())
	store := projection.NewStore(workerJS, env.Topology.Sessions, env.Topology.Questions)
	opstest.Start(b, ops.Component{Name: "projection", Run: projection.NewWorker(store, inbox.NewReplies(workerJS, env.Topology.Sessions, nil), projection.WorkerConfig{Logger: quiet}).Run})
	runWorker(b, worker.New(workerConn, workerJS, env.Topology, worker.Config{}, quiet))

	script, err := scripted.Parse(`ask db "Which database?" options Postgres,SQLite timeout 1
work 3 steps of 200ms
on late answer say Got {answers}.`)
	require.NoError(b, err)
	agentConn, _ := embeddedtest.Connect(b, env.Server.ClientURL())
	rt, err := runtime.New(ctx, runtime.Config{Conn: agentConn, Model: script.Model(), Ask: askuser.Config{Mode: askuser.ModeTimed}, Logger: quiet})
	require.NoError(b, err)
	defer rt.Close()
	userConn, _ := embeddedtest.Connect(b, env.Server.ClientURL())
	user := newUser(b, userConn, time.Minute)
	log := sessionlog.New(env.JS, env.Topology.Sessions)

	b.ResetTimer()
	began := time.Now()
	sids := make([]string, n)
	for i := range sids {
		sids[i] = fmt.Sprintf("load-%d", i)
		_, err := rt.Start(ctx, sids[i])
		require.NoError(b, err)
		_, err = runtime.Steer(ctx, env.JS, sids[i], "", "Set up the service.")
		require.NoError(b, err)
	}
	startedAt := time.Since(began)
	// Every question ends pending and is continued in the projection.
	for _, sid := range sids {
		require.Eventually(b, func() bool {
			v, err := user.View(ctx, sid)
			return err == nil && len(v.Active) == 1 && v.Active[0].Status == projection.Continued
		}, 2*time.Minute, 20*time.Millisecond, "session %s", sid)
	}
	pendingAt := time.Since(began)

	answered := make([]time.Time, n)
	for i, sid := range sids {
		res, err := user.Answer(ctx, holdover.AnswerRequest{Session: sid, CallID: "call_1", Answers: []holdover.Answer{{ID: "db", Selected: []string{"SQLite"}}}})
		require.NoError(b, err)
		require.True(b, res.Accepted)
		answered[i] = time.Now()
	}
	answeredAt := time.Since(began)
	latencies := make([]time.Duration, n)
	for i, sid := range sids {
		require.Eventually(b, func() bool {
			evts, _, err := log.Read(ctx, sid, 0)
			if err != nil {
				return false
			}
			for _, e := range evts {
				if um, ok := e.Body.(*events.UserMessage); ok && um.Message.Source.IsQuestionReply() {
					latencies[i] = e.At.Sub(answered[i])
					return true
				}
			}
			return false
		}, 2*time.Minute, 20*time.Millisecond, "session %s", sid)
	}
	wall := time.Since(began)
	b.StopTimer()

	slices.Sort(latencies)
	b.ReportMetric(wall.Seconds(), "wall-s")
	b.ReportMetric(startedAt.Seconds(), "all-started-s")
	b.ReportMetric(pendingAt.Seconds(), "all-pending-s")
	b.ReportMetric(answeredAt.Seconds(), "all-answered-s")
	b.ReportMetric(float64(latencies[n/2].Milliseconds()), "admit-p50-ms")
	b.ReportMetric(float64(latencies[n*99/100].Milliseconds()), "admit-p99-ms")
	b.ReportMetric(heapMiB(), "heap-MiB")
}

// heapMiB is the Go heap in use by this process (runtime, worker and
// embedded server together).
func heapMiB() float64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return float64(s[0].Value.Uint64()) / (1 << 20)
}
