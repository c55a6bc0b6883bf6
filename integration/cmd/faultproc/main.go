// Command faultproc is a process the fault tests and the foreground
// benchmarks start and SIGKILL, so that what it held is released by NATS
// alone, and so that a benchmark measures one process without the others'
// memory. It exists only for integration/ and is never shipped.
//
//	faultproc worker  -nats URL [-bound 1s] [-keep] [-replyackwait 30s]
//	faultproc folder  -nats URL [-ackwait 30s]
//	faultproc agent   -nats URL -session S -instance I -epoch E [-timed N] [-keyed N] [-timeout 1h] [-report]
//	faultproc server  -store DIR [-auth DIR]
//	faultproc runtime -nats URL -prefix P [-pool] [-bound 1s]
//	faultproc claimer -nats URL -session S [-bound 1s] [-claims N] [-timed N -instance I -epoch E]
//	faultproc asker   -nats URL -session S -instance I -epoch E
//
// A worker serves the question service. A folder runs the projection
// worker, which writes the Views and the reply reservations' markers. An
// agent sends its askTimed and
// keyed ask calls and waits on them. A server runs an embedded NATS server.
// A claimer watches the Session and holds a claim on each of the first N
// requests; with -timed it also sends the calls, as an agent would, so a
// whole load runs in one process. Each prints "ready" on stdout (the
// server adds its URL) once it serves, has sent every call or holds every
// claim, and then runs until it is killed. An agent with -report prints
// "outcome <call id> <pending|answered|error code> <ms since sent>" for
// each call as it ends (the freeze tests stop and continue it); without,
// a call that ends is an error, since the tests kill agents mid-wait.
//
// A server with -auth trusts the credentials `auth.Init` keeps in that
// folder (authentication on). A runtime is a Go agent runtime whose
// scripted model asks one timed question (timeout 1 s) and admits a late
// answer; with -pool it joins the resume pool too. The server and the
// runtime answer a "stats" line on stdin with
// one JSON line of the process's memory after a collection (the server
// adds its own counters), and the runtime a "start N" line by starting N
// more Sessions P-0, P-1, … and saying how long it took: what the scale
// test measures each process by.
package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sys/unix"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/answerer"
	"github.com/holdover-dev/holdover/askuser"
	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/caller"
	"github.com/holdover-dev/holdover/embedded"
	"github.com/holdover-dev/holdover/inbox"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/runtime"
	"github.com/holdover-dev/holdover/runtime/model/scripted"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/userquestions"
	"github.com/holdover-dev/holdover/worker"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: faultproc worker|folder|agent|claimer -nats URL …")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	url := fs.String("nats", "", "NATS server URL")
	creds := fs.String("creds", "", "NATS credentials of the process's role (auth on); the worker then uses the topology the test provisioned")
	bound := fs.Duration("bound", userquestions.MinReleaseBound, "release bound of leases and claims")
	session := fs.String("session", "", "agent: Session id")
	instance := fs.String("instance", "", "agent: live-root instance")
	epoch := fs.Uint64("epoch", 0, "agent: live-root epoch")
	timed := fs.Int("timed", 0, "agent: askTimed calls to wait on")
	keyed := fs.Int("keyed", 0, "agent: keyed blocking asks to wait on")
	claims := fs.Int("claims", 1, "claimer: requests to claim")
	timeout := fs.Duration("timeout", time.Hour, "agent: askTimed timeout")
	report := fs.Bool("report", false, "agent: print each call's outcome")
	store := fs.String("store", "", "server: JetStream store folder")
	ackWait := fs.Duration("ackwait", 0, "folder: AckWait of the projection consumer (0: the default)")
	replyAckWait := fs.Duration("replyackwait", 0, "worker: AckWait of the consumer of the queued replies (0: the default)")
	pool := fs.Bool("pool", false, "runtime: join the resume pool")
	keep := fs.Bool("keep", false, "worker: run a projection worker too, sharing its Views with the late answers, as question-worker does (the one-write late answer)")
	authDir := fs.String("auth", "", "server: credentials folder to trust (authentication on)")
	prefix := fs.String("prefix", "scale", "runtime: Session ids are <prefix>-<n>")
	_ = fs.Parse(os.Args[2:])
	if os.Args[1] == "server" {
		srv, err := serve(*store, *authDir)
		if err != nil {
			fail(err)
		}
		commands(srv, nil)
	}

	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	secure, err := ops.NATSConfig{Creds: *creds}.Options()
	if err != nil {
		fail(err)
	}
	nc, err := nats.Connect(*url, append(secure, nats.Name("faultproc-"+os.Args[1]))...)
	if err != nil {
		fail(err)
	}
	switch os.Args[1] {
	case "worker":
		err = serveWorker(nc, worker.Config{ReleaseBound: *bound, ReplyAckWait: *replyAckWait}, *creds == "", *keep, log)
	case "folder":
		err = folder(nc, *ackWait, *creds == "", log)
	case "agent":
		agent(nc, *bound, log, *session, holdover.AgentRef{Instance: *instance, Epoch: *epoch}, *timed, *keyed, *timeout, *report)
		fmt.Println("ready")
	case "runtime":
		var start func(n int) (time.Duration, error)
		if start, err = agentRuntime(nc, *prefix, *bound, *pool, log); err == nil {
			fmt.Println("ready")
			commands(nil, start)
		}
	case "asker":
		err = asker(nc, *bound, log, *session, holdover.AgentRef{Instance: *instance, Epoch: *epoch})
	case "leaseless":
		err = leaseless(nc, *session, holdover.AgentRef{Instance: *instance, Epoch: *epoch})
	case "claimer":
		err = claimer(nc, *bound, log, *session, *claims, func() {
			if *timed > 0 {
				agent(nc, *bound, log, *session, holdover.AgentRef{Instance: *instance, Epoch: *epoch}, *timed, 0, *timeout, *report)
			}
		})
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

// topology looks up the topology the test made, provisioning it,
// idempotently, when it may (no credentials: no authentication).
func topology(nc *nats.Conn, provision bool) (jetstream.JetStream, *streams.Topology, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	top, err := streams.Open(ctx, js)
	if provision {
		top, err = streams.Provision(ctx, js, streams.Config{Memory: true})
	}
	return js, top, err
}

// serveWorker serves the userQuestions service on the topology the test
// made; with keep, beside a projection worker whose Views its late answers
// decide from.
func serveWorker(nc *nats.Conn, cfg worker.Config, provision, keep bool, log *slog.Logger) error {
	js, top, err := topology(nc, provision)
	if err != nil {
		return err
	}
	if keep {
		cfg.Views = projection.NewStore(js, top.Sessions, top.Questions)
		w := projection.NewWorker(cfg.Views, inbox.NewReplies(js, top.Sessions, nil), projection.WorkerConfig{Logger: log})
		if _, err := ops.Start(context.Background(), ops.Component{Name: "projection", Run: w.Run}); err != nil {
			return err
		}
	}
	svc := worker.New(nc, js, top, cfg, log)
	if _, err := ops.Start(context.Background(), ops.Component{Name: "userQuestions", Run: svc.Run}); err != nil {
		return err
	}
	fmt.Println("ready")
	return nil
}

// folder runs a projection worker on the topology the test made.
func folder(nc *nats.Conn, ackWait time.Duration, provision bool, log *slog.Logger) error {
	js, top, err := topology(nc, provision)
	if err != nil {
		return err
	}
	w := projection.NewWorker(projection.NewStore(js, top.Sessions, top.Questions), inbox.NewReplies(js, top.Sessions, nil),
		projection.WorkerConfig{AckWait: ackWait, Logger: log})
	if _, err := ops.Start(context.Background(), ops.Component{Name: "projection", Run: w.Run}); err != nil {
		return err
	}
	fmt.Println("ready")
	return nil
}

// agent sends its calls and waits on them; the test kills it mid-wait,
// or with report freezes it and reads how each call ended.
func agent(nc *nats.Conn, bound time.Duration, log *slog.Logger, sid string, ref holdover.AgentRef, timed, keyed int, timeout time.Duration, report bool) {
	c, err := caller.New(context.Background(), nc, caller.Config{ReleaseBound: bound, Log: log})
	if err != nil {
		log.Error("hold the caller lease", "err", err)
		os.Exit(1)
	}
	qs := []holdover.Question{{ID: "q", Question: "Still there?"}}
	var out sync.Mutex
	for i := range timed {
		go func() {
			sent := time.Now()
			id := fmt.Sprintf("timed-%d", i)
			res, err := c.AskTimed(context.Background(), holdover.AskTimedRequest{
				Session: sid, CallID: id, Agent: &ref, Questions: qs, TimeoutMs: timeout.Milliseconds(),
			})
			if !report {
				log.Error("a call ended before the agent was killed", "err", err)
				return
			}
			outcome := "answered"
			switch {
			case err != nil:
				outcome = string(holdover.CodeOf(err))
			case res.Pending:
				outcome = "pending"
			}
			out.Lock()
			fmt.Printf("outcome %s %s %d\n", id, outcome, time.Since(sent).Milliseconds())
			out.Unlock()
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
}

// asker serves the latency benchmark: an askTimed per "ask <call id>"
// line on stdin, timed on the clock the benchmark and Node's
// process.hrtime share.
func asker(nc *nats.Conn, bound time.Duration, log *slog.Logger, sid string, ref holdover.AgentRef) error {
	c, err := caller.New(context.Background(), nc, caller.Config{ReleaseBound: bound, Log: log})
	if err != nil {
		return err
	}
	fmt.Println("ready")
	qs := []holdover.Question{{ID: "deploy", Question: "Deploy to production now?", Options: []holdover.Option{{Label: "yes"}, {Label: "no"}}}}
	lines := bufio.NewScanner(os.Stdin)
	for lines.Scan() {
		id, ok := strings.CutPrefix(lines.Text(), "ask ")
		if !ok {
			return fmt.Errorf("asker reads \"ask <call id>\" lines, not %q", lines.Text())
		}
		sent := monotonic()
		out, err := c.AskTimed(context.Background(), holdover.AskTimedRequest{Session: sid, CallID: id, Agent: &ref, Questions: qs, TimeoutMs: 600_000})
		done := monotonic()
		if err != nil || len(out.Answers) != 1 {
			return fmt.Errorf("ask %s: %+v, %v", id, out, err)
		}
		fmt.Printf("done %s %d %d\n", id, sent, done)
	}
	return lines.Err()
}

// monotonic reads CLOCK_MONOTONIC in nanoseconds.
func monotonic() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) // always supported on Linux
	return ts.Nano()
}

// leaseless asks a keyed blocking ask (call "keyed") and an askTimed (call
// "timed", one hour) of sid as the nats CLI would, with no caller lease,
// and says on its ready line, as JSON, what each call was answered and how
// long that took; then it waits to be killed.
func leaseless(nc *nats.Conn, sid string, ref holdover.AgentRef) error {
	qs := []holdover.Question{{ID: "q", Question: "Still there?"}}
	type answer struct {
		Code    holdover.Code `json:"code"`
		Message string        `json:"message"`
		TookMs  int64         `json:"tookMs"`
	}
	out := map[string]answer{}
	for op, req := range map[string]any{
		userquestions.OpAsk:      holdover.AskRequest{Session: sid, CallID: "keyed", Agent: &ref, Questions: qs},
		userquestions.OpAskTimed: holdover.AskTimedRequest{Session: sid, CallID: "timed", Agent: &ref, Questions: qs, TimeoutMs: 3_600_000},
	} {
		data, err := json.Marshal(req)
		if err != nil {
			return err
		}
		start := time.Now()
		m, err := nc.Request(userquestions.Subject(op), data, time.Minute)
		if err != nil {
			return err
		}
		e := &holdover.Error{}
		if rerr := userquestions.ReplyError(m); rerr != nil {
			e = holdover.Wire(rerr)
		}
		out[op] = answer{Code: e.Code, Message: e.Message, TookMs: time.Since(start).Milliseconds()}
	}
	said, err := json.Marshal(out)
	if err != nil {
		return err
	}
	fmt.Println("ready", string(said))
	return nil
}

// serve runs an embedded server with no consumer limit (every claim is
// one), trusting the credentials in authDir when it is set.
func serve(store, authDir string) (*embedded.Server, error) {
	opts := embedded.Options{StoreDir: store, MaxConsumers: -1}
	if authDir != "" {
		setup, err := auth.Init(authDir)
		if err != nil {
			return nil, err
		}
		opts.Auth = setup
	}
	srv, err := embedded.Start(opts)
	if err != nil {
		return nil, err
	}
	fmt.Println("ready", srv.ClientURL())
	return srv, nil
}

// runtimeScript is what every Session of a runtime does: ask one timed
// question that nobody answers in time, say so and end its Turn; then
// admit the late answer and end that Turn too.
const runtimeScript = `ask db "Which database?" options Postgres,SQLite timeout 1
say Going on without the database choice.
on late answer say Got {answers}.`

// agentRuntime opens a Go agent runtime on nc and returns what starts its
// Sessions: n more of them, named prefix-0, prefix-1, …, 64 at a time.
func agentRuntime(nc *nats.Conn, prefix string, bound time.Duration, pool bool, log *slog.Logger) (func(n int) (time.Duration, error), error) {
	script, err := scripted.Parse(runtimeScript)
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	rt, err := runtime.New(ctx, runtime.Config{Conn: nc, Model: script.Model(), Ask: askuser.Config{Mode: askuser.ModeTimed}, ReleaseBound: bound, Logger: log})
	if err != nil {
		return nil, err
	}
	if pool {
		if _, err := rt.ServePool(ctx); err != nil {
			return nil, err
		}
	}
	started := 0
	return func(n int) (time.Duration, error) {
		began := time.Now()
		var (
			wg    sync.WaitGroup
			slots = make(chan struct{}, 64)
			mu    sync.Mutex
			first error
		)
		for i := started; i < started+n; i++ {
			slots <- struct{}{}
			wg.Go(func() {
				defer func() { <-slots }()
				if _, err := rt.Start(ctx, fmt.Sprintf("%s-%d", prefix, i)); err != nil {
					mu.Lock()
					first = cmp.Or(first, err)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		started += n
		return time.Since(began), first
	}, nil
}

// stats is one process's memory after a collection, and the server's
// counters when the process runs one.
type stats struct {
	RSS        uint64 `json:"rss"`
	HeapInuse  uint64 `json:"heapInuse"`
	StackInuse uint64 `json:"stackInuse"`
	Goroutines int    `json:"goroutines"`
	// The server's own: its memory as it reports it (its RSS), its
	// connections and subscriptions, and the messages it has taken in
	// and sent out since it started.
	ServerMem     int64  `json:"serverMem,omitempty"`
	Connections   int    `json:"connections,omitempty"`
	Subscriptions uint32 `json:"subscriptions,omitempty"`
	InMsgs        int64  `json:"inMsgs,omitempty"`
	OutMsgs       int64  `json:"outMsgs,omitempty"`
	// Started is how many Sessions a "start" line started, StartMs how
	// long it took.
	Started int   `json:"started,omitempty"`
	StartMs int64 `json:"startMs,omitempty"`
}

// commands answers the lines on stdin until it ends, then waits to be
// killed: "stats" with the process's stats (and srv's counters when it
// runs one), "start N" (a runtime) with how long starting N more Sessions
// took.
func commands(srv *embedded.Server, start func(n int) (time.Duration, error)) {
	out := json.NewEncoder(os.Stdout)
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		line := strings.Fields(in.Text())
		switch {
		case len(line) == 1 && line[0] == "stats":
			_ = out.Encode(measure(srv))
		case len(line) == 2 && line[0] == "start" && start != nil:
			n, err := strconv.Atoi(line[1])
			if err != nil {
				fail(err)
			}
			took, err := start(n)
			if err != nil {
				fail(err)
			}
			_ = out.Encode(stats{Started: n, StartMs: took.Milliseconds()})
		default:
			fail(fmt.Errorf("unknown command %q", in.Text()))
		}
	}
	select {}
}

func measure(srv *embedded.Server) stats {
	goruntime.GC()
	var m goruntime.MemStats
	goruntime.ReadMemStats(&m)
	st := stats{RSS: rss(), HeapInuse: m.HeapInuse, StackInuse: m.StackInuse, Goroutines: goruntime.NumGoroutine()}
	if srv != nil {
		if v, err := srv.Varz(nil); err == nil {
			st.ServerMem, st.Connections, st.Subscriptions, st.InMsgs, st.OutMsgs = v.Mem, v.Connections, v.Subscriptions, v.InMsgs, v.OutMsgs
		}
	}
	return st
}

// rss is the process's resident set from /proc (Linux), 0 elsewhere.
func rss() uint64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// claimer holds a claim, with its frame received, on each of the first n
// requests of sid; ask runs once the claimer watches the Session.
func claimer(nc *nats.Conn, bound time.Duration, log *slog.Logger, sid string, n int, ask func()) error {
	a, err := answerer.New(nc, answerer.Config{ReleaseBound: bound, Log: log})
	if err != nil {
		return err
	}
	h := &claiming{log: log, left: n, attaching: make(chan struct{}, 64)}
	h.framed.Add(n)
	if _, err := a.Watch(context.Background(), sid, h); err != nil {
		return err
	}
	ask()
	h.framed.Wait()
	fmt.Println("ready")
	return nil
}

// claiming claims each delivered request until it holds enough, a few
// attaches at a time, without holding up the watch.
type claiming struct {
	log       *slog.Logger
	attaching chan struct{}
	framed    sync.WaitGroup

	mu   sync.Mutex
	left int
}

func (h *claiming) Request(d *answerer.Delivery) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.left == 0 {
		return
	}
	h.left--
	go h.claim(d)
}

func (h *claiming) claim(d *answerer.Delivery) {
	h.attaching <- struct{}{}
	defer func() { <-h.attaching }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := d.AttachWait(ctx) // held until the process dies
	if err != nil {
		h.log.Error("attach", "err", err)
		return
	}
	if _, err := c.Remaining(ctx); err != nil {
		h.log.Error("claim frame", "err", err)
		return
	}
	h.framed.Done()
}

func (h *claiming) Cancel(*answerer.Delivery, string) {}
