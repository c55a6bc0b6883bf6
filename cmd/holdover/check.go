package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/holdover-dev/holdover/logcheck"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/streams"
)

const checkSummary = "check every event of a Session's log against the protocol's schemas; exit 1 with the list of problems"

// runCheck validates Session sid's whole log (logcheck.Check) and prints
// one line per problem. It is the first thing to run when something a
// runtime recorded does not show up.
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
	if bad := report.Bad(); bad > 0 {
		return fmt.Errorf("%d of session %s's %d events have problems; the schemas are in the schemas/ folder of the Holdover repository", bad, sid, report.Events)
	}
	fmt.Fprintf(stderr, "ok: all %d events of session %s fit the schemas\n", report.Events, sid)
	return nil
}
