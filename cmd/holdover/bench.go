package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/bench"
	"github.com/holdover-dev/holdover/ops"
)

const benchSummary = "measure the question paths and the gateway fan-out against NATS, each beside the raw NATS primitive it is built on"

// runBench measures the question paths and the gateway fan-out against
// the NATS given (an embedded one with authentication on by default) and
// prints each as a ratio to its raw NATS primitive measured in the same
// run (package bench), so an operator checks a deployment with one
// command.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var (
		cfg     bench.Config
		plan    = bench.DefaultPlan
		measure = partNames(bench.Parts)
		rounds  = plan.Burst.Rounds
		logCfg  = ops.LogConfig{Format: "text"}
	)
	fs := newFlags("bench", "", benchSummary, stderr)
	fs.StringVar(&cfg.NATS, "nats", "", "NATS server URL(s), comma separated; empty starts an embedded server (authentication on) in a temporary folder")
	fs.StringVar(&cfg.CredsDir, "creds-dir", os.Getenv("HOLDOVER_NATS_CREDS_DIR"), "folder `holdover auth init` wrote; each part connects on its role's credentials from it (env HOLDOVER_NATS_CREDS_DIR); empty connects without credentials")
	fs.StringVar(&cfg.Tenant, "tenant", auth.DefaultTenant, "tenant of --creds-dir whose credentials to use")
	fs.BoolVar(&cfg.Worker, "worker", false, "run a question worker in this process as well as the deployment's (always on with the embedded server)")
	fs.StringVar(&measure, "measure", measure, "what to measure, comma separated: foreground (askTimed → delivery, answer → result), late (late answer), fanout (one request to the --fanout-clients watching its Session), burst (a request in each of --burst's Sessions at once); each fan-out beside core NATS to as many connections")
	fs.IntVar(&plan.Calls, "calls", plan.Calls, "samples of each question path")
	fs.IntVar(&rounds, "rounds", rounds, "times each fan-out asks every Session")
	fs.IntVar(&plan.OneRequest.Clients, "fanout-clients", plan.OneRequest.Clients, "WebSocket Clients the one request of fanout reaches")
	fs.Func("burst", fmt.Sprintf("the burst's shape, SESSIONSxCLIENTS: a request in each of SESSIONS Sessions at once, each watched by CLIENTS Clients (default %dx%d)", plan.Burst.Sessions, plan.Burst.Clients), func(v string) error {
		var err error
		plan.Burst.Sessions, plan.Burst.Clients, err = parseShape(v)
		return err
	})
	// Warnings only by default: the parts' info lines would bury the table.
	fs.TextVar(&logCfg.Level, "log-level", slog.LevelWarn, "log level of the measured parts, on stderr: debug, info, warn or error")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("bench takes no arguments, got %q", fs.Args())}
	}
	if plan.Calls < 1 || rounds < 1 || plan.OneRequest.Clients < 1 {
		return usageError{"--calls, --rounds and --fanout-clients must be at least 1"}
	}
	plan.Parts = nil
	for _, name := range strings.Split(measure, ",") {
		part, err := bench.ParsePart(strings.TrimSpace(name))
		if err != nil {
			return usageError{"--measure: " + holdover.Wire(err).Message}
		}
		plan.Parts = append(plan.Parts, part)
	}
	plan.OneRequest.Rounds, plan.Burst.Rounds = rounds, rounds
	if cfg.NATS == "" && cfg.CredsDir != "" {
		return usageError{"--creds-dir goes with --nats: the embedded server makes credentials of its own"}
	}
	logger, err := logCfg.Logger(stderr)
	if err != nil {
		return usageError{err.Error()}
	}
	cfg.Logger = logger
	rig, err := bench.Start(ctx, cfg)
	if err != nil {
		return err
	}
	defer rig.Close()
	where := "a deployment at " + rig.URL()
	if cfg.NATS == "" {
		where = "an embedded server at " + rig.URL() + " (authentication on)"
	}
	fmt.Fprintf(stdout, "holdover bench: %s; question worker in this process: %s; %d samples a path, %d rounds a fan-out\n",
		where, yesNo(cfg.Worker || cfg.NATS == ""), plan.Calls, rounds)
	fmt.Fprintf(stdout, "load average before: %s\n\n", loadAverage())
	began := time.Now()
	var rows []bench.Row
	err = rig.Run(ctx, plan, func(r bench.Row) {
		rows = append(rows, r)
		fmt.Fprintf(stderr, "measured %s (%s)\n", r.Name, time.Since(began).Round(100*time.Millisecond))
	})
	if err != nil {
		return err
	}
	printRows(stdout, rows)
	fmt.Fprintf(stdout, "\nmeasured in %s; load average after: %s\n", time.Since(began).Round(100*time.Millisecond), loadAverage())
	return nil
}

// printRows prints the rows as a table: each path's p50 and p99, their
// ratios to the raw primitive's, and the primitive's own.
func printRows(w io.Writer, rows []bench.Row) {
	table := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(table, "path\tp50\tp99\t× raw p50\t× raw p99\traw primitive\traw p50\traw p99\tn")
	for _, r := range rows {
		fmt.Fprintf(table, "%s\t%s\t%s\t%.2f\t%.2f\t%s\t%s\t%s\t%d\n", r.Name,
			short(r.Path.Quantile(0.5)), short(r.Path.Quantile(0.99)), r.Ratio(0.5), r.Ratio(0.99),
			r.RawName, short(r.Raw.Quantile(0.5)), short(r.Raw.Quantile(0.99)), len(r.Path))
	}
	_ = table.Flush()
}

// parseShape reads a burst's shape, SESSIONSxCLIENTS: 100x10.
func parseShape(v string) (sessions, clients int, err error) {
	s, c, ok := strings.Cut(v, "x")
	if ok {
		sessions, err = strconv.Atoi(s)
	}
	if ok && err == nil {
		clients, err = strconv.Atoi(c)
	}
	if !ok || err != nil || sessions < 1 || clients < 1 {
		return 0, 0, fmt.Errorf("%q is not SESSIONSxCLIENTS, two whole numbers of at least 1 (100x10)", v)
	}
	return sessions, clients, nil
}

// partNames lists parts as --measure takes them.
func partNames(parts []bench.Part) string {
	names := make([]string, len(parts))
	for i, p := range parts {
		names[i] = string(p)
	}
	return strings.Join(names, ",")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// short keeps three significant figures or so, enough to compare.
func short(d time.Duration) time.Duration {
	switch {
	case d >= 10*time.Millisecond:
		return d.Round(100 * time.Microsecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

// loadAverage is the machine's 1, 5 and 15 minute load average where the
// system tells it (Linux), since a shared machine's figures depend on it.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	fields := strings.Fields(string(data))
	if len(fields) < 3 {
		return "unknown"
	}
	return strings.Join(fields[:3], " ")
}
