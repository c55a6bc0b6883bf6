package termclient

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/holdover-dev/holdover"
)

// Options is one run of the terminal Client: `holdover answer`.
type Options struct {
	// Gateway and Token say where to connect and as whom (see Config).
	Gateway string
	Token   string
	// Session is the Session whose questions to list and answer.
	Session string
	// List only lists the questions.
	List bool
	// Call answers this call directly; without Answers, Skips or JSON the
	// answers are typed.
	Call string
	// Answers ("id=value"), Skips ("id") and JSON ({"answers":[…]}) give
	// the answers of Call, see BatchFromFlags and BatchFromJSON.
	Answers []string
	Skips   []string
	JSON    string
	// Wait bounds each wait for the gateway: for a question's answer
	// channel to arrive, for the projection to show an answer's outcome.
	// 0 means DefaultWait.
	Wait time.Duration
	// Logger gets what the Client passes over; nil discards it.
	Logger *slog.Logger
}

// DefaultWait is the wait bound of Options.Wait.
const DefaultWait = 30 * time.Second

// flagged reports whether the answers come from flags.
func (o Options) flagged() bool { return len(o.Answers) > 0 || len(o.Skips) > 0 || o.JSON != "" }

// Check reports an Options that asks for something Run cannot do.
func (o Options) Check() error {
	switch {
	case o.Session == "":
		return holdover.New(holdover.CodeBadRequest, "name the Session whose questions to answer")
	case o.JSON != "" && (len(o.Answers) > 0 || len(o.Skips) > 0):
		return holdover.New(holdover.CodeBadRequest, "give the answers as a JSON batch or as --answer/--skip flags, not both")
	case o.flagged() && o.Call == "":
		return holdover.New(holdover.CodeBadRequest, "answers from flags need the call they answer (--call)")
	case o.List && (o.Call != "" || o.flagged()):
		return holdover.New(holdover.CodeBadRequest, "--list only lists; it takes no call or answers")
	}
	return nil
}

// Run connects to the gateway and does what opts ask: list the Session's
// open and continued questions; answer one call from flags; or list them
// and let the person pick and answer calls typed on in, until in ends or
// they quit. Outcomes and prompts go to out. A failure comes back with its
// code: the gateway's (UNAUTHORIZED, FORBIDDEN, UNAVAILABLE), the question
// service's (REPLY_QUEUED, BAD_ANSWER), or the reason a late answer was
// refused (CALL_OPEN, CALL_UNKNOWN, CALL_SETTLED, NO_AGENT); NOT_FOUND for
// a call the Session does not show.
func Run(ctx context.Context, opts Options, in io.Reader, out io.Writer) error {
	if err := opts.Check(); err != nil {
		return err
	}
	c, err := Dial(ctx, Config{Gateway: opts.Gateway, Token: opts.Token, Logger: opts.Logger})
	if err != nil {
		return err
	}
	defer c.Close()
	s, err := c.Watch(ctx, opts.Session)
	if err != nil {
		return err
	}
	wait := opts.Wait
	if wait <= 0 {
		wait = DefaultWait
	}
	stop := make(chan struct{})
	defer close(stop)
	f := &flow{c: c, s: s, in: lines(in, stop), out: out, wait: wait, typed: !opts.flagged()}
	if opts.Call == "" {
		if err := f.awaitRequests(ctx); err != nil {
			return err
		}
		if opts.List {
			f.list()
			return nil
		}
		return f.pick(ctx)
	}
	e, ok := s.Entry(opts.Call)
	if !ok {
		return holdover.Newf(holdover.CodeNotFound, "Session %s has no open or continued call %s", opts.Session, opts.Call)
	}
	if f.typed {
		fmt.Fprintf(out, "Call %s  %s\n", e.CallID, statusOf(e))
		return f.answer(ctx, e, f.typedAnswers)
	}
	// The batch is checked before anything is claimed or sent.
	var batch []holdover.Answer
	if opts.JSON != "" {
		batch, err = BatchFromJSON(e.Questions(), opts.JSON)
	} else {
		batch, err = BatchFromFlags(e.Questions(), opts.Answers, opts.Skips)
	}
	if err != nil {
		return err
	}
	return f.answer(ctx, e, func(context.Context, []holdover.Question, func() error) ([]holdover.Answer, error) {
		return batch, nil
	})
}

// lines delivers the lines read from r, without their line endings, and
// closes at the end of r. It stops handing lines on once stop closes.
func lines(r io.Reader, stop <-chan struct{}) <-chan string {
	out := make(chan string)
	if r == nil {
		close(out)
		return out
	}
	go func() {
		defer close(out)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 0, 4096), 1<<20)
		for sc.Scan() {
			select {
			case out <- strings.TrimSuffix(sc.Text(), "\r"):
			case <-stop:
				return
			}
		}
	}()
	return out
}
