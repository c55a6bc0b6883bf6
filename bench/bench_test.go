package bench_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/bench"
	"github.com/holdover-dev/holdover/embedded"
)

// A short run against an embedded server (authentication on) measures
// every row: each path and its primitive have every sample, every sample
// took some time but not forever, and the ratios are finite. Targets are
// benchmarks' (docs/operations.md), not this test's: it only checks the
// figures are real.
func TestRunMeasuresEveryRow(t *testing.T) {
	ctx, rig := startRig(t)
	plan := bench.Plan{
		Calls:      20,
		OneRequest: bench.FanOutConfig{Sessions: 1, Clients: 3, Rounds: 4},
		Burst:      bench.FanOutConfig{Sessions: 2, Clients: 3, Rounds: 4},
	}
	var rows []bench.Row
	require.NoError(t, rig.Run(ctx, plan, func(r bench.Row) { rows = append(rows, r) }))

	want := []struct {
		name string
		n    int // samples
	}{
		{"askTimed → Client delivery", 20},
		{"Client answer → result at the agent", 20},
		{"late answer → reply durable", 20},
		{"gateway fan-out, one request (1×3 Clients) → last Client", 4},
		{"gateway fan-out, one request (1×3 Clients) → each Client", 4 * 3},
		{"gateway fan-out, burst of 2 (2×3 Clients) → last Client", 4},
		{"gateway fan-out, burst of 2 (2×3 Clients) → each Client", 4 * 2 * 3},
	}
	require.Len(t, rows, len(want))
	for i, r := range rows {
		assert.Equal(t, want[i].name, r.Name)
		assertSane(t, r, want[i].n)
	}
}

// Only the parts asked for are measured, in Run's order.
func TestRunMeasuresThePartsAskedFor(t *testing.T) {
	ctx, rig := startRig(t)
	plan := bench.Plan{Parts: []bench.Part{bench.PartBurst, bench.PartLate}, Calls: 5, Burst: bench.FanOutConfig{Sessions: 2, Clients: 1, Rounds: 1}}
	var names []string
	require.NoError(t, rig.Run(ctx, plan, func(r bench.Row) { names = append(names, r.Name) }))
	assert.Equal(t, []string{
		"late answer → reply durable",
		"gateway fan-out, burst of 2 (2×1 Clients) → last Client",
		"gateway fan-out, burst of 2 (2×1 Clients) → each Client",
	}, names)
	_, err := bench.ParsePart("fan-out")
	assert.ErrorContains(t, err, `no part "fan-out"`)
	p, err := bench.ParsePart("burst")
	require.NoError(t, err)
	assert.Equal(t, bench.PartBurst, p)
}

// A tiny fan-out of every shape: every Client read every request of its
// Sessions once in each round (FanOut fails otherwise), so the last-Client
// row has a sample a round (a batch, one at a time) and the each-Client
// row one a Client a Session a round, both beside as many raw samples.
func TestFanOutShapes(t *testing.T) {
	ctx, rig := startRig(t)
	for _, tc := range []struct {
		cfg        bench.FanOutConfig
		name       string
		last, each int
	}{
		{bench.FanOutConfig{Sessions: 2, Clients: 3, Rounds: 3}, "burst of 2 (2×3 Clients)", 3, 3 * 2 * 3},
		{bench.FanOutConfig{Sessions: 2, Clients: 3, Rounds: 3, OneAtATime: true}, "one at a time (2×3 Clients)", 3 * 2, 3 * 2 * 3},
		{bench.FanOutConfig{Sessions: 2, Clients: 3, Rounds: 3, Watches: 2}, "burst of 2 (2×3 Clients, 2 Sessions a Client)", 3, 3 * 2 * 3},
		{bench.FanOutConfig{Sessions: 2, Clients: 3, Rounds: 3, Watches: 2, Protocol: 1}, "burst of 2 (2×3 Clients, 2 Sessions a Client, protocol 1)", 3, 3 * 2 * 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows, err := rig.FanOut(ctx, tc.cfg)
			require.NoError(t, err)
			require.Len(t, rows, 2)
			assert.Equal(t, "gateway fan-out, "+tc.name+" → last Client", rows[0].Name)
			assert.Equal(t, "gateway fan-out, "+tc.name+" → each Client", rows[1].Name)
			assertSane(t, rows[0], tc.last)
			assertSane(t, rows[1], tc.each)
			// The last Client of a round is one of its Clients.
			assert.GreaterOrEqual(t, rows[0].Path.Quantile(1), rows[1].Path.Quantile(0))
		})
	}
	_, err := rig.FanOut(ctx, bench.FanOutConfig{Sessions: 2, Clients: 3, Rounds: 1, Watches: 4})
	assert.ErrorContains(t, err, "Watches dividing Sessions × Clients")
	_, err = rig.FanOut(ctx, bench.FanOutConfig{Sessions: 1, Clients: 1})
	assert.ErrorContains(t, err, "at least one Session, Client and round")
}

// startRig starts a Rig on an embedded server (authentication on) for
// the test, with two minutes to measure in.
func startRig(t *testing.T) (context.Context, *bench.Rig) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	rig, err := bench.Start(ctx, bench.Config{})
	require.NoError(t, err)
	t.Cleanup(rig.Close)
	return ctx, rig
}

// assertSane checks a row has n samples of the path and of its primitive,
// each above zero and below a minute, and finite ratios above zero.
func assertSane(t *testing.T, r bench.Row, n int) {
	t.Helper()
	assert.NotEmpty(t, r.Key, r.Name)
	assert.NotEmpty(t, r.RawName, r.Name)
	assert.Len(t, r.Path, n, r.Name)
	assert.Len(t, r.Raw, n, r.Name)
	for _, s := range [][]time.Duration{r.Path, r.Raw} {
		for _, d := range s {
			assert.Greater(t, d, time.Duration(0), r.Name)
			assert.Less(t, d, time.Minute, r.Name)
		}
	}
	for _, q := range []float64{0.5, 0.99} {
		ratio := r.Ratio(q)
		assert.False(t, math.IsInf(ratio, 0) || math.IsNaN(ratio) || ratio <= 0, "%s: ratio %v", r.Name, ratio)
	}
}

// Against a server nobody provisioned, the Rig says what is missing and
// provisions nothing: a deployment's configuration is its workers'.
func TestStartOnAnUnprovisionedServerSaysSo(t *testing.T) {
	srv, err := embedded.Start(embedded.Options{StoreDir: t.TempDir()})
	require.NoError(t, err)
	defer srv.Stop()
	_, err = bench.Start(context.Background(), bench.Config{NATS: srv.ClientURL()})
	assert.True(t, holdover.HasCode(err, holdover.CodeNotFound), "%v", err)
	assert.ErrorContains(t, err, "run holdover provision")
	nc, err := nats.Connect(srv.ClientURL())
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	names := js.StreamNames(context.Background())
	var made []string
	for name := range names.Name() {
		made = append(made, name)
	}
	require.NoError(t, names.Err())
	assert.Empty(t, made, "the Rig made streams on a deployment")
}

// The quantile is by nearest rank, over the samples as taken.
func TestQuantile(t *testing.T) {
	s := bench.Samples{5, 1, 4, 2, 3}
	assert.Equal(t, time.Duration(3), s.Quantile(0.5))
	assert.Equal(t, time.Duration(5), s.Quantile(0.99))
	assert.Equal(t, time.Duration(1), s.Quantile(0))
	assert.Equal(t, bench.Samples{5, 1, 4, 2, 3}, s, "the samples keep their order")
	assert.Zero(t, bench.Samples{}.Quantile(0.5))
	r := bench.Row{Path: bench.Samples{6}, Raw: bench.Samples{2}}
	assert.InDelta(t, 3.0, r.Ratio(0.5), 1e-9)
	assert.Zero(t, bench.Row{Path: bench.Samples{6}}.Ratio(0.5), "no primitive measured, no ratio")
}
