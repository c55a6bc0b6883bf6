package integration

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/streams"
)

// testSeed returns HOLDOVER_SEED when set, so a failure replays, and a
// fresh seed otherwise. The seed is logged either way.
func testSeed(t *testing.T) uint64 {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("HOLDOVER_SEED"); s != "" {
		var err error
		seed, err = strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "HOLDOVER_SEED")
	}
	t.Logf("seed %d (rerun with HOLDOVER_SEED=%d)", seed, seed)
	return seed
}

// D1–D5: randomized Session logs are published while projection workers
// start, stop gracefully, crash mid-batch (their unacknowledged events are
// redelivered), run two at a time, see the shared consumer reset (every
// event redelivered) and race an operator's rebuild. Every value ever written is the fold of a prefix of
// its Session's log, and in the end every Session converges to the fold of
// its whole log.
func TestProjectionConvergesThroughRestartsCrashesRedeliveryAndTwoWorkers(t *testing.T) {
	seed := testSeed(t)
	r := rand.New(rand.NewPCG(seed, seed>>1|1))
	env := embeddedtest.Start(t, streams.Config{Memory: true})
	ctx := context.Background()
	logs := newSessionLogs(env.JS, env.Topology.Sessions)
	seen := recordViews(t, env.Topology.Questions)
	workers := newFleet(t, env.Server.ClientURL(), projection.WorkerConfig{
		AckWait:    time.Second, // a crashed worker's events come back quickly
		RetryDelay: 50 * time.Millisecond,
		Batch:      1 + r.IntN(64),
	})

	const sessions, perSession = 6, 150
	scripts := make([]*agentScript, sessions)
	for i := range scripts {
		scripts[i] = newAgentScript(rand.New(rand.NewPCG(seed, uint64(i))), "s"+strconv.Itoa(i), questionHeavy)
	}
	workers.start()
	store := projection.NewStore(env.JS, env.Topology.Sessions, env.Topology.Questions)
	var resets, crashes, rebuilds int
	for step := range sessions * perSession {
		a := scripts[r.IntN(sessions)]
		for _, rec := range a.script(1) {
			_, err := logs.append(ctx, a.sid, rec)
			require.NoError(t, err)
		}
		if r.IntN(40) != 0 {
			continue
		}
		running := workers.ids()
		switch choice := r.IntN(6); {
		case len(running) < 2 && choice < 2:
			workers.start()
		case len(running) > 0 && choice == 2:
			workers.stop(running[r.IntN(len(running))])
		case len(running) > 0 && choice == 3:
			workers.crash(running[r.IntN(len(running))])
			crashes++
		case len(running) == 0 && choice == 4:
			// Forget every delivery: the next worker gets the whole log again.
			err := env.JS.DeleteConsumer(ctx, streams.SessionsStream, projection.DefaultDurable)
			if !errors.Is(err, jetstream.ErrConsumerNotFound) { // not already reset
				require.NoError(t, err)
				resets++
			}
		case choice == 5:
			// An operator's rebuild, racing the workers' writes.
			_, err := store.Rebuild(ctx)
			require.NoError(t, err)
			rebuilds++
		}
		t.Logf("step %d: workers %v", step, workers)
	}
	for len(workers.ids()) < 2 {
		workers.start()
	}
	waitConverged(t, env.Topology.Questions, logs, 30*time.Second)
	values := seen()
	requirePrefixFolds(t, logs, values)
	t.Logf("%d events, %d values written, %d crashes, %d consumer resets, %d rebuilds, %.0f CAS conflicts, %.0f catch-ups",
		logs.count(), len(values), crashes, resets, rebuilds,
		counterValue(workers.metrics.KVConflicts.WithLabelValues(streams.QuestionsBucket)),
		counterValue(workers.metrics.CatchUps.WithLabelValues(projection.DefaultDurable)))

	for _, sid := range logs.ids() {
		_, folded, equal, err := store.Check(ctx, sid)
		require.NoError(t, err)
		require.True(t, equal, "holdover inspect agrees for %s", sid)
		require.Equal(t, logs.want(sid, 0), folded)
	}
}
