package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/holdover-dev/holdover/cmd/internal/questionworker"
	"github.com/holdover-dev/holdover/embedded"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/streams"
)

// runDev runs the whole system in one process: an embedded NATS server
// with JetStream files under --data, then the question worker. Ctrl-C
// stops the components, then the server, so nothing is left half written.
func runDev(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var (
		data        string
		natsPort    int
		metricsAddr string
		logCfg      ops.LogConfig
	)
	fs := newFlags("dev", "", devSummary, stderr)
	fs.StringVar(&data, "data", ".holdover", "folder for JetStream files; kept across runs")
	fs.IntVar(&natsPort, "nats-port", 4222, "port of the embedded NATS server on 127.0.0.1 (0 picks a free one)")
	fs.StringVar(&metricsAddr, "metrics-addr", questionworker.DefaultMetricsAddr, "address of /metrics and /healthz")
	logCfg.RegisterFlags(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("dev takes no arguments, got %q", fs.Args())}
	}
	logger, err := logCfg.Logger(stderr)
	if err != nil {
		return usageError{err.Error()}
	}
	dir, err := filepath.Abs(data)
	if err != nil {
		return err
	}

	srv, err := embedded.Start(embedded.Options{StoreDir: dir, Port: natsPort, Name: "holdover-dev"})
	if err != nil {
		return fmt.Errorf("start NATS on 127.0.0.1:%d: %w", natsPort, err)
	}
	defer srv.Stop()
	url := srv.ClientURL()
	nc, js, err := ops.NATSConfig{URL: url}.Connect("holdover-dev", logger)
	if err != nil {
		return err
	}
	defer nc.Close()

	// Components start in order; each may rely on the ones before it.
	components, err := questionworker.Components(ctx, nc, js, questionworker.Config{MetricsAddr: metricsAddr, Logger: logger})
	if err != nil {
		return err
	}

	fmt.Fprintf(stdout, `Holdover dev is running.
  NATS     %s  (JetStream files in %s)
  metrics  http://%s/metrics   health  http://%s/healthz

Look at a Session's questions with the nats CLI (--raw prints the whole JSON):
  nats --server %s kv get %s <session-id> --raw
  nats --server %s stream ls
or with this binary:
  holdover inspect --nats %s <session-id>

Ctrl-C stops.
`, url, dir, metricsAddr, metricsAddr, url, streams.QuestionsBucket, url, url)
	return ops.Run(ctx, logger, components...)
}
