package integration

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/gateway"
	"github.com/holdover-dev/holdover/inbox"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/steer/steertest"
	"github.com/holdover-dev/holdover/termclient"
)

// termWorld is the gateway world (a worker whose Host deadlines run on a
// fake clock, an agent Client, a gateway with the users ana and bo) plus
// the projection worker, so the views the terminal Client gets follow the
// Session log. The tests write that log as the agent runtime does: the
// timed header and the tool call before the agent asks, the tool result
// once askTimed has returned.
type termWorld struct {
	*gwWorld
	gateway string // http://127.0.0.1:port, as a person gives it
}

func newTermWorld(t *testing.T) *termWorld {
	t.Helper()
	w := &termWorld{gwWorld: newGWWorld(t, gateway.Limits{})}
	w.gateway = "http://" + strings.TrimSuffix(strings.TrimPrefix(w.url, "ws://"), "/ws")
	folder := projection.NewWorker(projection.NewStore(w.env.JS, w.env.Topology.Sessions, w.env.Topology.Questions), inbox.NewReplies(w.env.JS, w.env.Topology.Sessions, nil),
		projection.WorkerConfig{Logger: slog.New(slog.DiscardHandler)})
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		_ = folder.Run(ctx, func() {})
	}()
	t.Cleanup(func() {
		cancel()
		<-stopped
	})
	return w
}

// session starts writing the log of Session sid under a timed header.
func (w *termWorld) session(sid string) *steertest.Session {
	s := steertest.NewSession(w.t, w.sessions, sid)
	s.Header(true)
	return s
}

// ask records the timed call callID and has the agent ask it with a Host
// deadline of ms, as a runtime does; it returns once the request is in
// flight, and where the agent's result lands.
func (w *termWorld) ask(s *steertest.Session, agent *holdover.AgentRef, callID string, qs []holdover.Question, ms int64) <-chan fgResult {
	w.t.Helper()
	s.Ask(callID, qs)
	done := w.askTimed(context.Background(), w.agent, holdover.AskTimedRequest{Session: s.ID, CallID: callID, Agent: agent, Questions: qs, TimeoutMs: ms})
	require.Eventually(w.t, func() bool {
		listed, err := w.agent.Inflight(context.Background(), s.ID)
		return err == nil && len(listed) > 0
	}, fgPatience, time.Millisecond, "the request of %s never was in flight", callID)
	return done
}

// recordResult records what askTimed returned as the call's tool result:
// the answer batch, or pending (M6, M7).
func recordResult(t *testing.T, s *steertest.Session, callID string, r fgResult) {
	t.Helper()
	require.NoError(t, r.err)
	if r.out.Pending {
		s.Pending(callID)
		return
	}
	s.Append(&events.ToolResult{Turn: s.Turn, CallID: callID, Name: holdover.ToolName,
		Content: events.Text(holdover.Batch{Answers: r.out.Answers}.String())})
}

// options are the terminal Client's options for user token on Session sid.
func (w *termWorld) options(token, sid string) termclient.Options {
	return termclient.Options{Gateway: w.gateway, Token: token, Session: sid, Wait: fgPatience}
}

// once runs the terminal Client with no input and returns what it printed.
func once(opts termclient.Options) (string, error) {
	var out bytes.Buffer
	err := termclient.Run(context.Background(), opts, nil, &out)
	return out.String(), err
}

// terminal is a running terminal Client: a person types on its input and
// reads its output.
type terminal struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *termOutput
	done chan struct{} // closed when Run has returned err
	err  error
}

// start runs the terminal Client until its input ends.
func start(t *testing.T, opts termclient.Options) *terminal {
	r, in := io.Pipe()
	term := &terminal{t: t, in: in, out: &termOutput{changed: make(chan struct{})}, done: make(chan struct{})}
	go func() {
		defer close(term.done)
		term.err = termclient.Run(context.Background(), opts, r, term.out)
	}()
	t.Cleanup(func() {
		_ = in.Close()
		select {
		case <-term.done:
		case <-time.After(fgPatience):
			t.Error("the terminal Client did not stop at the end of its input")
		}
	})
	return term
}

// typeLine types one line and Enter.
func (term *terminal) typeLine(line string) {
	term.t.Helper()
	_, err := io.WriteString(term.in, line+"\n")
	require.NoError(term.t, err)
}

// see waits until the output holds text after everything seen before,
// and moves past it.
func (term *terminal) see(text string) {
	term.t.Helper()
	deadline := time.After(fgPatience)
	for {
		changed, ok := term.out.take(text)
		if ok {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			term.t.Fatalf("the terminal never showed %q; it showed:\n%s", text, term.out.String())
		}
	}
}

// end types the end of input and returns how the Client ended.
func (term *terminal) end() error {
	term.t.Helper()
	require.NoError(term.t, term.in.Close())
	select {
	case <-term.done:
		return term.err
	case <-time.After(fgPatience):
		term.t.Fatal("the terminal Client did not stop at the end of its input")
		return nil
	}
}

// termOutput is a terminal's screen: everything written, and how far the
// test has read.
type termOutput struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	read    int
	changed chan struct{}
}

func (o *termOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	close(o.changed)
	o.changed = make(chan struct{})
	return o.buf.Write(p)
}

// take finds text after what was read, and reads past it; else it returns
// a channel closed at the next write.
func (o *termOutput) take(text string) (<-chan struct{}, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	i := strings.Index(o.buf.String()[o.read:], text)
	if i < 0 {
		return o.changed, false
	}
	o.read += i + len(text)
	return nil, true
}

func (o *termOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}
