package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/streams"
)

const (
	authSummary      = "write NATS credentials: an operator, a data and a clients account per tenant, one credentials file per role (init); expiring ones for a restore (restore-creds)"
	provisionSummary = "create or update the JetStream streams and buckets (admin credentials)"
)

// runAuth runs `holdover auth init [--dir d] [tenant...]` and
// `holdover auth restore-creds [--dir d] [--for 1h] tenant`.
func runAuth(_ context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "restore-creds" {
		return runRestoreCreds(args[1:], stdout, stderr)
	}
	if len(args) == 0 || args[0] != "init" {
		return usageError{"usage: holdover auth init [--dir auth] [tenant ...] | holdover auth restore-creds [--dir auth] [--for 1h] tenant"}
	}
	var (
		dir    string
		limits auth.Limits
	)
	fs := newFlags("auth init", "[tenant ...]", authSummary, stderr)
	fs.StringVar(&dir, "dir", "auth", "folder for keys, account JWTs, credentials and the nats-server fragment; kept across runs (keys are reused)")
	fs.IntVar(&limits.MaxConsumers, "max-consumers", auth.DefaultMaxConsumers, "consumers each stream of a tenant may hold, whoever makes them (NATS bounds them per stream, never per role or account total)")
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	setup, err := auth.InitWith(abs, limits, fs.Args()...)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "NATS credentials in %s\n", abs)
	fmt.Fprintf(stdout, "  server: include %s in the nats-server configuration\n", filepath.Join(abs, auth.ServerConfigFile))
	for _, t := range setup.Tenants() {
		var roles []string
		for _, r := range auth.Roles {
			roles = append(roles, string(r))
		}
		fmt.Fprintf(stdout, "  tenant %s (account %s): %s/{%s}.creds\n", t, setup.Account(t), filepath.Dir(setup.Creds(t, auth.Admin)), strings.Join(roles, ","))
	}
	fmt.Fprintln(stdout, "Give each process its role's file with --creds; provision once with `holdover provision --creds <admin.creds>`.")
	return nil
}

// runRestoreCreds writes short-lived credentials in a tenant's data
// account for a restore, which its clients account cannot carry.
func runRestoreCreds(args []string, stdout, stderr io.Writer) error {
	var (
		dir string
		ttl time.Duration
	)
	fs := newFlags("auth restore-creds", "tenant", "write credentials, valid for --for, that may back up and restore the streams of a tenant's data account (nats backup restore stream)", stderr)
	fs.StringVar(&dir, "dir", "auth", "the folder of holdover auth init")
	fs.DurationVar(&ttl, "for", time.Hour, "how long the credentials are valid (at most 24h)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError{"usage: holdover auth restore-creds [--dir auth] [--for 1h] tenant"}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	path, err := auth.RestoreCreds(abs, fs.Arg(0), ttl)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "restore credentials of tenant %s, valid until %s: %s\n", fs.Arg(0), time.Now().Add(ttl).UTC().Format(time.RFC3339), path)
	fmt.Fprintf(stdout, "  nats --creds %s backup restore stream <backup folder>\n", path)
	return nil
}

// plainDurable is a durable name --durable takes: one that needs no
// quoting in the stream's metadata list or a subject.
var plainDurable = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// runProvision creates or updates the topology.
func runProvision(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var (
		natsCfg ops.NATSConfig
		cfg     streams.Config
	)
	fs := newFlags("provision", "", provisionSummary, stderr)
	natsCfg.RegisterFlags(fs)
	fs.IntVar(&cfg.Replicas, "replicas", 1, "replicas per stream and bucket (3 on a cluster)")
	fs.BoolVar(&cfg.Memory, "memory", false, "keep streams and buckets in memory (tests and demos only)")
	fs.IntVar(&cfg.MaxConsumers, "max-consumers", 0, "consumers each stream may hold; 0 leaves the tenant's bound (auth init --max-consumers)")
	fs.Func("durable", "a durable consumer on SESSIONS the worker keeps while nobody reads it, besides projection, replies and notify: a notifier's --durable (repeatable)", func(name string) error {
		if !plainDurable.MatchString(name) {
			return fmt.Errorf("durable %q may hold only letters, digits, '-' and '_'", name)
		}
		cfg.Durables = append(cfg.Durables, name)
		return nil
	})
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("provision takes no arguments, got %q", fs.Args())}
	}
	nc, js, err := natsCfg.Connect("holdover-provision", slog.New(slog.NewTextHandler(stderr, nil)))
	if err != nil {
		return err
	}
	defer nc.Close()
	if _, err := streams.Provision(ctx, js, cfg); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "provisioned %s, %s and the buckets %s, %s\n", streams.SessionsStream, streams.ClaimsStream,
		streams.QuestionsBucket, streams.RootsBucket)
	return nil
}
