// Command faultproc is a process the fault tests start and SIGKILL: a
// question worker, or an agent with many calls waiting. It exists only for
// integration/fault_*_test.go and is never shipped.
//
//	faultproc worker -nats URL [-bound 1s]
//	faultproc agent  -nats URL -session S -instance I -epoch E [-timed N] [-keyed N]
//
// Each prints "ready" on stdout once it serves or has sent every call, and
// then runs until it is killed.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/userquestions"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: faultproc worker|agent -nats URL …")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	url := fs.String("nats", "", "NATS server URL")
	bound := fs.Duration("bound", userquestions.MinReleaseBound, "release bound of leases and claims")
	session := fs.String("session", "", "agent: Session id")
	instance := fs.String("instance", "", "agent: live-root instance")
	epoch := fs.Uint64("epoch", 0, "agent: live-root epoch")
	timed := fs.Int("timed", 0, "agent: askTimed calls to wait on")
	keyed := fs.Int("keyed", 0, "agent: keyed blocking asks to wait on")
	_ = fs.Parse(os.Args[2:])

	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	nc, err := nats.Connect(*url, nats.Name("faultproc-"+os.Args[1]))
	if err != nil {
		fail(err)
	}
	switch os.Args[1] {
	case "worker":
		err = worker(nc, *bound, log)
	case "agent":
		agent(nc, *bound, log, *session, holdover.AgentRef{Instance: *instance, Epoch: *epoch}, *timed, *keyed)
	default:
		err = fmt.Errorf("unknown role %q", os.Args[1])
	}
	if err != nil {
		fail(err)
	}
	select {} // until killed
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "faultproc:", err)
	os.Exit(1)
}

// worker serves the userQuestions service on the topology the test made.
func worker(nc *nats.Conn, bound time.Duration, log *slog.Logger) error {
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	top, err := streams.Provision(ctx, js, streams.Config{Memory: true})
	if err != nil {
		return err
	}
	svc := userquestions.New(nc, js, top, userquestions.Config{Foreground: userquestions.ForegroundConfig{ReleaseBound: bound}}, log)
	if err := svc.Start(ctx); err != nil {
		return err
	}
	fmt.Println("ready")
	return nil
}

// agent sends its calls and waits on them; the test kills it mid-wait.
func agent(nc *nats.Conn, bound time.Duration, log *slog.Logger, sid string, ref holdover.AgentRef, timed, keyed int) {
	c := userquestions.NewClient(nc, 0)
	c.ConfigureCalls(userquestions.CallerConfig{ReleaseBound: bound, Log: log})
	qs := []holdover.Question{{ID: "q", Question: "Still there?"}}
	for i := range timed {
		go func() {
			_, err := c.AskTimed(context.Background(), holdover.AskTimedRequest{
				Session: sid, CallID: fmt.Sprintf("timed-%d", i), Agent: &ref, Questions: qs, TimeoutMs: 3_600_000,
			})
			log.Error("a call ended before the agent was killed", "err", err)
		}()
	}
	for i := range keyed {
		go func() {
			_, err := c.Ask(context.Background(), holdover.AskRequest{
				Session: sid, CallID: fmt.Sprintf("keyed-%d", i), Agent: &ref, Questions: qs,
			})
			log.Error("a call ended before the agent was killed", "err", err)
		}()
	}
	fmt.Println("ready")
}
