package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover/logcheck"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/sessionlog"
	"github.com/holdover-dev/holdover/streams"
)

// runInspect prints Session sid's stored projection on stdout and checks
// that it equals the fold of the Session's log. A difference is an error
// that shows where the two part.
func runInspect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var natsCfg ops.NATSConfig
	fs := newFlags("inspect", "<session-id>", inspectSummary, stderr)
	natsCfg.RegisterFlags(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError{"inspect takes one Session id (flags go before it)"}
	}
	sid := fs.Arg(0)
	op, err := openOperator(natsCfg)
	if err != nil {
		return err
	}
	defer op.close()
	store := op.store

	stored, folded, equal, err := store.Check(ctx, sid)
	if err != nil {
		return err
	}
	if _, found, err := store.Get(ctx, sid); err != nil {
		fmt.Fprintf(stderr, "the stored value is unreadable: %v\n", err)
	} else if !found && folded.LastSeq == 0 {
		return fmt.Errorf("session %s has no events and no projection", sid)
	}
	out := indent(stored)
	fmt.Fprintln(stdout, out)
	if err := printRejected(ctx, op, sid, stderr); err != nil {
		return err
	}
	if equal {
		fmt.Fprintf(stderr, "ok: the projection equals the fold of session %s's log (last seq %d)\n", sid, folded.LastSeq)
		return nil
	}
	return fmt.Errorf("the stored projection of session %s differs from the fold of its log\n%s", sid, difference(stored, folded, out))
}

// printRejected lists the events of Session sid the question fold passes
// over or reads differently from what their writer meant.
func printRejected(ctx context.Context, op operator, sid string, stderr io.Writer) error {
	log, err := op.log.ReadStored(ctx, sid, 0)
	if err != nil {
		return err
	}
	n := 0
	for _, m := range log {
		if r, rejected := logcheck.Rejected(m); rejected {
			fmt.Fprintf(stderr, "rejected: %s\n", r)
			n++
		}
	}
	if n > 0 {
		fmt.Fprintf(stderr, "%d events of session %s were rejected; `holdover check %s` lists every problem of its log\n", n, sid, sid)
	}
	return nil
}

// difference explains how a stored View departs from the fold of its log.
func difference(stored, folded projection.View, storedJSON string) string {
	var b strings.Builder
	if stored.LastSeq < folded.LastSeq {
		fmt.Fprintf(&b, "  the projection is at seq %d and the log at seq %d: a running worker may still be folding\n", stored.LastSeq, folded.LastSeq)
	}
	have, want := strings.Split(storedJSON, "\n"), strings.Split(indent(folded), "\n")
	for i := 0; i < max(len(have), len(want)); i++ {
		h, w := line(have, i), line(want, i)
		if h != w {
			fmt.Fprintf(&b, "  first difference at line %d:\n    stored: %s\n    folded: %s\n", i+1, h, w)
			break
		}
	}
	b.WriteString("  `holdover rebuild` rewrites every projection from its log")
	return b.String()
}

func line(lines []string, i int) string {
	if i >= len(lines) {
		return "(end)"
	}
	return strings.TrimSpace(lines[i])
}

func indent(v projection.View) string {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprintf("%+v", v)
	}
	return string(data)
}

// runRebuild refolds every Session's projection from its log.
func runRebuild(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var natsCfg ops.NATSConfig
	fs := newFlags("rebuild", "", rebuildSummary, stderr)
	natsCfg.RegisterFlags(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("rebuild takes no arguments, got %q", fs.Args())}
	}
	op, err := openOperator(natsCfg)
	if err != nil {
		return err
	}
	defer op.close()
	stats, err := op.store.Rebuild(ctx)
	fmt.Fprintf(stdout, "refolded %d sessions (%d events); repaired %d projections\n", stats.Sessions, stats.Events, stats.Repaired)
	return err
}

// operator is what the operator commands read through: the projection
// store and the Session logs of an existing topology.
type operator struct {
	store    *projection.Store
	log      *sessionlog.Log
	sessions jetstream.Stream // the logs and the inboxes
	close    func()
}

// openOperator connects to NATS and opens the existing topology. Operator
// commands never provision: they must not change a deployment's
// configuration by reading it. They read with direct gets, never a
// consumer, which the operator's credentials may not create.
func openOperator(natsCfg ops.NATSConfig) (operator, error) {
	logger := slog.New(slog.DiscardHandler)
	nc, js, err := natsCfg.Connect("holdover-cli", logger)
	if err != nil {
		return operator{}, err
	}
	ctx := context.Background()
	sessions, err := js.Stream(ctx, streams.SessionsStream)
	if err == nil {
		var kv jetstream.KeyValue
		if kv, err = js.KeyValue(ctx, streams.QuestionsBucket); err == nil {
			return operator{store: projection.NewDirectStore(js, sessions, kv), log: sessionlog.NewDirect(js, sessions), sessions: sessions, close: nc.Close}, nil
		}
	}
	nc.Close()
	return operator{}, fmt.Errorf("no Holdover topology at %s (start `holdover dev` or question-worker first): %w", natsCfg.URL, err)
}
