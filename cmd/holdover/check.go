package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/holdover-dev/holdover/inbox"
	"github.com/holdover-dev/holdover/logcheck"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/streams"
)

const checkSummary = "check everything the question fold reads of a Session (its log, its inbox, its stored View) against the protocol; exit 1 with the list of problems"

// runCheck checks Session sid's whole log (logcheck.Check), its inbox
// (logcheck.CheckInbox) and that its stored View is the log's fold
// (logcheck.CheckProjection), and prints one line per problem. It is the
// first thing to run when something a runtime recorded does not show up.
func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var natsCfg ops.NATSConfig
	fs := newFlags("check", "<session-id>", checkSummary, stderr)
	natsCfg.RegisterFlags(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError{"check takes one Session id (flags go before it)"}
	}
	sid := fs.Arg(0)
	if err := streams.CheckSession(sid); err != nil {
		return err
	}
	op, err := openOperator(natsCfg)
	if err != nil {
		return err
	}
	defer op.close()
	log, err := op.log.ReadStored(ctx, sid, 0)
	if err != nil {
		return err
	}
	if len(log) == 0 {
		return fmt.Errorf("session %s has no events", sid)
	}
	report, err := logcheck.Check(log)
	if err != nil {
		return err
	}
	msgs, err := inbox.ReadStored(ctx, op.sessions, sid)
	if err != nil {
		return err
	}
	inboxProblems, err := logcheck.CheckInbox(msgs)
	if err != nil {
		return err
	}
	stored, folded, equal, err := caughtUpCheck(ctx, op.store, sid)
	if err != nil {
		return err
	}
	logBad := report.Bad()
	viewProblems := logcheck.CheckProjection(stored, folded, equal)
	report.Problems = append(report.Problems, inboxProblems...)
	report.Problems = append(report.Problems, viewProblems...)
	for _, p := range report.Problems {
		fmt.Fprintln(stdout, p)
	}
	if types := report.UnreadTypes(); len(types) > 0 {
		counts := make([]string, len(types))
		for i, t := range types {
			counts[i] = fmt.Sprintf("%s ×%d", t, report.Unread[t])
		}
		fmt.Fprintf(stderr, "passed over, as types Holdover does not read: %s\n", strings.Join(counts, ", "))
	}
	if len(report.Problems) > 0 {
		also := ""
		if len(inboxProblems) > 0 {
			also += fmt.Sprintf(", and %d problems with its %d inbox messages", len(inboxProblems), len(msgs))
		}
		if len(viewProblems) > 0 {
			also += ", and its stored View is not the fold of its log"
		}
		return fmt.Errorf("%d of session %s's %d events have problems%s; the schemas are in the schemas/ folder of the Holdover repository", logBad, sid, report.Events, also)
	}
	fmt.Fprintf(stderr, "ok: all %d events of session %s fit the schemas, so do its %d inbox messages, and its stored View is the fold of its log\n", report.Events, sid, len(msgs))
	return nil
}

// foldWait bounds how long check gives a projection worker that is behind
// the log to fold it, before it calls the stored View a problem.
const foldWait = 5 * time.Second

// caughtUpCheck is projection.Store.Check, asked again while the stored
// View is behind the log (a worker folding it) for up to foldWait: only a
// View that stays behind, or differs at the same seq, is a problem.
func caughtUpCheck(ctx context.Context, store *projection.Store, sid string) (stored, folded projection.View, equal bool, err error) {
	deadline := time.Now().Add(foldWait)
	for {
		stored, folded, equal, err = store.Check(ctx, sid)
		if err != nil || equal || stored.LastSeq >= folded.LastSeq || time.Now().After(deadline) {
			return stored, folded, equal, err
		}
		select {
		case <-ctx.Done():
			return stored, folded, equal, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
