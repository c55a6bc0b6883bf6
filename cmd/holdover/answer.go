package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/holdover-dev/holdover/termclient"
)

const answerSummary = "list a Session's open and continued questions and answer them through the gateway"

// runAnswer is the terminal Client (package termclient): it lists the
// questions of a Session and answers them like the web Client does, typed
// at the terminal or given by flags.
func runAnswer(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var (
		opts           termclient.Options
		answers, skips repeated
	)
	fs := newFlags("answer", "<session-id>", answerSummary, stderr)
	fs.StringVar(&opts.Gateway, "gateway", envOr("HOLDOVER_GATEWAY", "http://127.0.0.1:8080"), "address of the gateway (env HOLDOVER_GATEWAY)")
	fs.StringVar(&opts.Token, "token", os.Getenv("HOLDOVER_TOKEN"), "access token (env HOLDOVER_TOKEN)")
	fs.BoolVar(&opts.List, "list", false, "only list the questions")
	fs.StringVar(&opts.Call, "call", "", "answer this call; without answer flags the answers are typed")
	fs.Var(&answers, "answer", "answer of one question, `id=value`: an option (label or number; several comma-separated for multi-select) or custom:text; repeatable")
	fs.Var(&skips, "skip", "skip the question with this `id`; repeatable")
	fs.StringVar(&opts.JSON, "json", "", `the whole answer batch as JSON, {"answers":[{"id":…,"selected":[…],"custom":…}]}`)
	fs.DurationVar(&opts.Wait, "wait", termclient.DefaultWait, "how long to wait for a question's answer channel, and for an answer's outcome")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError{"answer takes one Session id (flags go before it)"}
	}
	opts.Session = fs.Arg(0)
	opts.Answers, opts.Skips = answers, skips
	if err := opts.Check(); err != nil {
		return usageError{termclient.Describe(err)}
	}
	opts.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if err := termclient.Run(ctx, opts, os.Stdin, stdout); err != nil {
		return coded{err}
	}
	return nil
}

// repeated is a flag that may be given many times.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, ", ") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

// coded shows an error with its stable code first, so a script can read
// it from stderr: "holdover answer: REPLY_QUEUED: …".
type coded struct{ err error }

func (c coded) Error() string { return termclient.Describe(c.err) }
func (c coded) Unwrap() error { return c.err }

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
