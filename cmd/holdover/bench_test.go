package main

import (
	"context"
	"errors"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/streams"
)

// holdover bench against a running deployment (holdover dev, whose worker
// answers, authentication on) prints every row beside its raw primitive,
// each part on its role's credentials from the folder dev wrote, and
// leaves none of its Sessions' logs, inboxes, Views or roots behind.
func TestBenchAgainstADeployment(t *testing.T) {
	dev := startDev(t, "--no-demo")
	admin := dev.as(t, auth.Admin)
	// dev prints its addresses while its worker may still be starting.
	require.Eventually(t, func() bool {
		_, err := streams.Open(context.Background(), admin)
		return err == nil
	}, 30*time.Second, 10*time.Millisecond, "dev never provisioned")
	code, stdout, stderr := cli(t, "bench", "--nats", dev.url, "--creds-dir", filepath.Join(dev.data, "auth"), "--calls", "10",
		"--rounds", "10", "--fanout-clients", "3", "--burst", "2x5")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "holdover bench: a deployment at "+dev.url+"; question worker in this process: no; 10 samples a path, 10 rounds a fan-out")
	assert.Contains(t, stdout, "load average before: ")
	for _, row := range []string{"askTimed → Client delivery", "Client answer → result at the agent", "late answer → reply durable",
		"gateway fan-out, one request (1×3 Clients) → last Client", "gateway fan-out, burst of 2 (2×5 Clients) → last Client"} {
		line := lineWith(stdout, row)
		require.NotEmpty(t, line, "no row %q in\n%s", row, stdout)
		cols := columns.Split(line, -1) // path p50 p99 ×p50 ×p99 primitive p50 p99 n
		require.Len(t, cols, 9, "%q", line)
		for _, c := range []string{cols[1], cols[2], cols[6], cols[7]} {
			d, err := time.ParseDuration(c)
			require.NoError(t, err, "%q", line)
			assert.Positive(t, d, "%q", line)
		}
		for _, c := range cols[3:5] {
			ratio, err := strconv.ParseFloat(c, 64)
			require.NoError(t, err, "%q", line)
			assert.Positive(t, ratio, "%q", line)
		}
		assert.Equal(t, "10", cols[8], "%q", line)
	}

	ctx := context.Background()
	sessions, err := admin.Stream(ctx, streams.SessionsStream)
	require.NoError(t, err)
	info, err := sessions.Info(ctx, jetstream.WithSubjectFilter("holdover.session.bench-*.>"))
	require.NoError(t, err)
	assert.Empty(t, info.State.Subjects, "bench Sessions left in %s", streams.SessionsStream)
	for _, name := range []string{streams.QuestionsBucket, streams.RootsBucket} {
		kv, err := admin.KeyValue(ctx, name)
		require.NoError(t, err)
		keys, err := kv.Keys(ctx)
		if !errors.Is(err, jetstream.ErrNoKeysFound) {
			require.NoError(t, err)
		}
		for _, k := range keys {
			assert.False(t, strings.HasPrefix(k, "bench-"), "bench key %s left in %s", k, name)
		}
	}
}

func TestBenchCommandLine(t *testing.T) {
	code, _, stderr := cli(t, "bench", "--calls", "0")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "must be at least 1")
	code, _, stderr = cli(t, "bench", "--measure", "late,fan-out")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `no part "fan-out" to measure`)
	for _, shape := range []string{"100", "0x10", "10xten"} {
		code, _, stderr = cli(t, "bench", "--burst", shape)
		assert.Equal(t, 2, code, shape)
		assert.Contains(t, stderr, "is not SESSIONSxCLIENTS", shape)
	}
	code, _, stderr = cli(t, "bench", "extra")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "bench takes no arguments")
	code, _, stderr = cli(t, "bench", "--creds-dir", t.TempDir())
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "--creds-dir goes with --nats")
}

// columns part a table line: tabwriter pads with two spaces or more, and
// no cell holds two spaces in a row.
var columns = regexp.MustCompile(`\s{2,}`)

// lineWith is the first line of out that starts with prefix, trimmed.
func lineWith(out, prefix string) string {
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, prefix) {
			return strings.TrimSpace(line)
		}
	}
	return ""
}
