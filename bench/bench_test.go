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

	"github.com/holdover-dev/holdover/bench"
	"github.com/holdover-dev/holdover/embedded"
)

// A short run against an embedded server (authentication on) measures
// every row: each path and its primitive have every sample, every sample
// took some time but not forever, and the ratios are finite. Targets are
// benchmarks' (docs/operations.md), not this test's: it only checks the
// figures are real.
func TestRunMeasuresEveryRow(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rig, err := bench.Start(ctx, bench.Config{})
	require.NoError(t, err)
	defer rig.Close()
	const calls = 20
	var rows []bench.Row
	require.NoError(t, rig.Run(ctx, calls, func(r bench.Row) { rows = append(rows, r) }))

	want := []string{"askTimed → Client delivery", "Client answer → result at the agent", "late answer → reply durable"}
	require.Len(t, rows, len(want))
	for i, r := range rows {
		assert.Equal(t, want[i], r.Name)
		assert.NotEmpty(t, r.Key, r.Name)
		assert.NotEmpty(t, r.RawName, r.Name)
		assert.Len(t, r.Path, calls, r.Name)
		assert.Len(t, r.Raw, calls, r.Name)
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
}

// Against a server nobody provisioned, the Rig says what is missing and
// provisions nothing: a deployment's configuration is its workers'.
func TestStartOnAnUnprovisionedServerSaysSo(t *testing.T) {
	srv, err := embedded.Start(embedded.Options{StoreDir: t.TempDir()})
	require.NoError(t, err)
	defer srv.Stop()
	_, err = bench.Start(context.Background(), bench.Config{NATS: srv.ClientURL()})
	assert.ErrorContains(t, err, "provision it first")
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
