// Command question-worker runs Holdover's question worker against a NATS
// server or cluster: it provisions the JetStream topology and folds the
// Session logs into the userQuestions projection, and serves the
// userQuestions micro service (foreground waits, claims, late answers),
// /metrics and /healthz. Run several against one cluster to scale out.
//
//	question-worker --nats nats://nats-1:4222,nats://nats-2:4222 --replicas 3
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/cmd/internal/questionworker"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/userquestions"
	"github.com/holdover-dev/holdover/worker"
)

func main() {
	var (
		natsCfg ops.NATSConfig
		logCfg  ops.LogConfig
		cfg     questionworker.Config
	)
	fs := flag.NewFlagSet("question-worker", flag.ExitOnError)
	natsCfg.RegisterFlags(fs)
	logCfg.RegisterFlags(fs)
	fs.StringVar(&cfg.MetricsAddr, "metrics-addr", questionworker.DefaultMetricsAddr, "address of /metrics and /healthz")
	fs.IntVar(&cfg.Streams.Replicas, "replicas", 1, "replicas per stream and bucket (3 on a cluster)")
	fs.BoolVar(&cfg.Streams.Memory, "memory", false, "keep streams and buckets in memory (tests and demos only)")
	provision := fs.Bool("provision", true, "provision the topology at start (needs admin credentials; with worker credentials run `holdover provision` and pass --provision=false)")
	fs.DurationVar(&cfg.Service.ReleaseBound, "release-bound", userquestions.DefaultReleaseBound,
		"how long after a Client, agent or worker disappears its claims and waits are released (at least 1s)")
	fs.DurationVar(&cfg.Service.ConsumerIdle, "consumer-idle", worker.DefaultConsumerIdle,
		"how long a consumer the server would not end soon after its last use (a durable no role shares, a long inactive threshold) may stay idle before the worker deletes it; negative never")
	_ = fs.Parse(os.Args[1:])

	logger, err := logCfg.Logger(os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "question-worker:", err)
		os.Exit(2)
	}
	cfg.Logger = logger
	cfg.NoProvision = !*provision
	if err := checkProvision(natsCfg, *provision); err != nil {
		fmt.Fprintln(os.Stderr, "question-worker:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, natsCfg, cfg); err != nil {
		logger.Error("question worker stopped", ops.Err(err))
		os.Exit(1)
	}
}

// checkProvision refuses, before connecting, to provision with the
// credentials of a role that may not: NATS would refuse the requests
// and leave them to time out.
func checkProvision(natsCfg ops.NATSConfig, provision bool) error {
	if !provision || natsCfg.Creds == "" {
		return nil
	}
	role, err := auth.RoleOf(natsCfg.Creds)
	if err != nil {
		return err
	}
	if role != "" && role != auth.Admin {
		return fmt.Errorf("%s credentials may not provision: run `holdover provision --creds <admin.creds>` once and start workers with --provision=false", role)
	}
	return nil
}

// run connects to NATS and runs the worker's components until ctx ends.
func run(ctx context.Context, natsCfg ops.NATSConfig, cfg questionworker.Config) error {
	nc, js, err := natsCfg.Connect("holdover-question-worker", cfg.Logger)
	if err != nil {
		return err
	}
	defer nc.Close()
	components, err := questionworker.Components(ctx, nc, js, cfg)
	if err != nil {
		return err
	}
	return ops.Run(ctx, cfg.Logger, components...)
}
