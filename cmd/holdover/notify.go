package main

import (
	"context"
	"fmt"
	"io"

	"github.com/holdover-dev/holdover/cmd/internal/notifyproc"
	"github.com/holdover-dev/holdover/ops"
)

const notifySummary = "post each new and each pending question to webhooks (chat incoming webhooks too)"

// runNotify runs a notifier against NATS: it follows the Session logs
// and posts a notification for each question transition to every
// webhook, with /metrics and /healthz.
func runNotify(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var (
		natsCfg     ops.NATSConfig
		logCfg      ops.LogConfig
		cfg         notifyproc.Config
		metricsAddr string
	)
	fs := newFlags("notify", "", notifySummary, stderr)
	natsCfg.RegisterFlags(fs)
	logCfg.RegisterFlags(fs)
	cfg.RegisterFlags(fs)
	fs.StringVar(&metricsAddr, "metrics-addr", notifyproc.DefaultMetricsAddr, "address of /metrics and /healthz")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("notify takes no arguments, got %q", fs.Args())}
	}
	if len(cfg.Webhooks) == 0 {
		return usageError{"name at least one --webhook (or list them in " + notifyproc.WebhooksEnv + ")"}
	}
	logger, err := logCfg.Logger(stderr)
	if err != nil {
		return usageError{err.Error()}
	}
	nc, js, err := natsCfg.Connect("holdover-notify", logger)
	if err != nil {
		return err
	}
	defer nc.Close()
	metrics := ops.NewMetrics()
	cfg.Notify.Metrics, cfg.Notify.Logger = metrics, logger
	notifier, err := notifyproc.Component(ctx, js, cfg)
	if err != nil {
		return err
	}
	return ops.Run(ctx, logger,
		ops.NATSConnection(nc),
		ops.HTTPServer("metrics", metricsAddr, ops.Handler(metrics, ops.NATSConnected(nc)), logger),
		notifier)
}
