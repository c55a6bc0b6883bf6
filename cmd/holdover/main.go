// Command holdover is Holdover's one binary for people: `holdover dev`
// runs the whole system locally with nothing installed, and the operator
// commands look at and repair the durable state of a running one.
//
//	holdover dev                    # the whole system in one process, data in ./.holdover
//	holdover agent --session s1     # an agent runtime against NATS (scripted or OpenAI-compatible model)
//	holdover mcp                    # ask_user_question for MCP hosts (Claude Code, Cursor, Codex CLI), docs/mcp.md
//	holdover hook                   # a Claude Code hook: hands late answers to the host's model
//	holdover answer <session-id>    # a terminal Client: list, claim and answer questions
//	holdover notify --webhook URL   # post each new and each pending question to webhooks
//	holdover inspect <session-id>   # a Session's projection, checked against its log
//	holdover check <session-id>     # every event of a Session's log, checked against the schemas
//	holdover rebuild                # refold every Session's projection
//	holdover auth init [tenant...]  # NATS credentials: an account per tenant, a creds file per role
//	holdover provision              # create or update the streams and buckets (admin credentials)
//	holdover bench [--nats URL]     # the question paths measured against NATS, as ratios to raw NATS
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// command is one subcommand: it parses its own flags from args and runs
// until done or until ctx ends.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

const (
	devSummary     = "run the whole system locally in one process: NATS, worker, gateway and web UI, demo agent"
	inspectSummary = "print a Session's projection and check it equals the fold of its log"
	rebuildSummary = "refold every Session's projection from its log"
)

var commands = map[string]command{
	"agent":     {agentSummary, runAgent},
	"answer":    {answerSummary, runAnswer},
	"bench":     {benchSummary, runBench},
	"auth":      {authSummary, runAuth},
	"check":     {checkSummary, runCheck},
	"dev":       {devSummary, runDev},
	"hook":      {hookSummary, runHook},
	"inspect":   {inspectSummary, runInspect},
	"mcp":       {mcpSummary, runMCP},
	"notify":    {notifySummary, runNotify},
	"provision": {provisionSummary, runProvision},
	"rebuild":   {rebuildSummary, runRebuild},
}

// commandOrder is the order usage lists commands in.
var commandOrder = []string{"dev", "agent", "mcp", "hook", "answer", "notify", "inspect", "check", "rebuild", "auth", "provision", "bench"}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes the subcommand named by args[0] and returns the exit code:
// 0 on success, 1 when the command failed, 2 for a usage error.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "holdover: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	err := cmd.run(ctx, args[1:], stdout, stderr)
	var usageErr usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &usageErr):
		fmt.Fprintf(stderr, "holdover %s: %v\n", args[0], err)
		return 2
	}
	fmt.Fprintf(stderr, "holdover %s: %v\n", args[0], err)
	return 1
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: holdover <command> [flags] [arguments]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	for _, name := range commandOrder {
		fmt.Fprintf(w, "  %-8s %s\n", name, commands[name].summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run `holdover <command> -h` for a command's flags.")
}

// usageError is a command line the command cannot run.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// newFlags returns a flag set for a subcommand that reports errors
// instead of exiting, writing its help to stderr.
func newFlags(name, arguments, summary string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("holdover "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: holdover %s [flags] %s\n\n%s.\n\nflags:\n", name, arguments, summary)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses args, turning a bad flag into a usage error (the flag
// package has already printed why).
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	return nil
}
