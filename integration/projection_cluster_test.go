package integration

import (
	"cmp"
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/sessionlog"
	"github.com/holdover-dev/holdover/streams"
)

// A 3-node cluster with R3 streams and buckets keeps working when the
// SESSIONS leader is stopped mid-publish: every acknowledged event is in
// the log afterwards, in order, and the projection converges (D1).
func TestProjectionSurvivesAStoppedClusterNode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	seed := testSeed(t)
	began := time.Now()
	c, js, topo := startCluster(t, 3, streams.Config{Replicas: 3})
	ctx := context.Background()
	logs := newSessionLogs(js, topo.Sessions)
	workers := newFleet(t, c.url(), projection.WorkerConfig{AckWait: 2 * time.Second, RetryDelay: 100 * time.Millisecond})
	workers.start()
	workers.start()
	t.Logf("cluster up after %v", time.Since(began))

	const sessions, perSession = 5, 80
	scripts := make([]*agentScript, sessions)
	for i := range scripts {
		scripts[i] = newAgentScript(rand.New(rand.NewPCG(seed, uint64(i))), "c"+strconv.Itoa(i), questionHeavy)
	}
	stopped := ""
	for step := range sessions * perSession {
		a := scripts[step%sessions]
		_, err := logs.append(ctx, a.sid, a.script(1)[0])
		require.NoError(t, err, "step %d", step)
		if step == sessions*perSession/3 {
			info, err := topo.Sessions.Info(ctx)
			require.NoError(t, err)
			stopped = info.Cluster.Leader
			t.Logf("step %d: stopping %s, the %s leader", step, stopped, streams.SessionsStream)
			c.stop(stopped)
		}
	}
	t.Logf("published after %v", time.Since(began))
	waitConverged(t, topo.Questions, logs, 30*time.Second)
	t.Logf("converged after %v", time.Since(began))

	info, err := topo.Sessions.Info(ctx)
	require.NoError(t, err)
	require.NotEqual(t, stopped, info.Cluster.Leader, "a surviving node leads")
	read := sessionlog.New(js, topo.Sessions)
	for _, sid := range logs.ids() {
		got, bad, err := read.Read(ctx, sid, 0)
		require.NoError(t, err)
		seqs := map[uint64]bool{}
		for _, e := range got {
			seqs[e.Seq] = true
		}
		for _, b := range bad {
			seqs[b.Seq] = true
			got = append(got, events.Event{Seq: b.Seq}) // passed over, as the worker does
		}
		slices.SortFunc(got, func(a, b events.Event) int { return cmp.Compare(a.Seq, b.Seq) })
		logs.mu.Lock()
		want := logs.stored[sid]
		logs.mu.Unlock()
		require.Len(t, seqs, len(want), "session %s lost or gained events", sid)
		for _, e := range want {
			require.True(t, seqs[e.Seq], "session %s lost acknowledged seq %d", sid, e.Seq)
		}
		require.Equal(t, viewJSON(logs.want(sid, 0)), viewJSON(projection.Fold(got)), "session %s", sid)
	}
	t.Logf("%d events over %d sessions; %s stopped, %s leads", logs.count(), sessions, stopped, info.Cluster.Leader)
}
