package main

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/answerer"
	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/bridge"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/lease"
)

// Fault tests of holdover mcp as a real process: a host SIGKILLed
// mid-wait leaves nothing to say goodbye, so only NATS noticing its
// connection is gone ends its leases.

// faultBound is the release bound of the hosts' leases: the shortest the
// system takes, so the faults are quick.
const faultBound = lease.MinReleaseBound

// faultSlack is what the tests allow beyond the release bound for NATS to
// delete a lease and the worker to act on it, on a loaded machine under
// -race (the integration fault tests allow the same).
const faultSlack = 3 * time.Second

// mcpHost is one `holdover mcp` process with the Go SDK's client on its stdio.
type mcpHost struct {
	cmd    *exec.Cmd
	cs     *mcp.ClientSession
	stderr *syncBuffer
}

// startHost starts holdover mcp on Session sid, as a host does.
func (w *bridgeWorld) startHost(t *testing.T, sid string) *mcpHost {
	t.Helper()
	h := &mcpHost{stderr: &syncBuffer{}}
	h.cmd = exec.Command(w.bin, "mcp", "--nats", w.dev.url, "--creds", w.dev.creds(auth.Agent), "--session", sid, "--release-bound", faultBound.String())
	h.cmd.Stderr = h.stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "fault-host", Version: "1"}, nil)
	cs, err := client.Connect(w.ctx, &mcp.CommandTransport{Command: h.cmd}, nil)
	require.NoError(t, err)
	h.cs = cs
	t.Cleanup(func() { _ = cs.Close() })
	return h
}

func (h *mcpHost) call(t *testing.T, ctx context.Context, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err, "host log:\n%s", h.stderr)
	return res
}

// kill SIGKILLs the host process.
func (h *mcpHost) kill(t *testing.T) {
	t.Helper()
	require.NoError(t, h.cmd.Process.Kill())
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// syncBuffer is a process's stderr, read while it is written.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// watcher is a user's Client watching a Session: the requests it gets and
// the reasons of their cancel notices.
type watcher struct {
	requests chan *answerer.Delivery
	cancels  chan string
}

func (w *bridgeWorld) watch(t *testing.T, sid string) *watcher {
	t.Helper()
	rec := &watcher{requests: make(chan *answerer.Delivery, 10), cancels: make(chan string, 10)}
	watch, err := w.user.Watch(w.ctx, sid, rec)
	require.NoError(t, err)
	t.Cleanup(func() { _ = watch.Close(context.Background()) })
	return rec
}

func (r *watcher) Request(d *answerer.Delivery)            { r.requests <- d }
func (r *watcher) Cancel(_ *answerer.Delivery, why string) { r.cancels <- why }

func (r *watcher) request(t *testing.T) *answerer.Delivery {
	t.Helper()
	select {
	case d := <-r.requests:
		return d
	case <-time.After(30 * time.Second):
		t.Fatal("the question never reached the Client")
		return nil
	}
}

func (r *watcher) cancel(t *testing.T) string {
	t.Helper()
	select {
	case why := <-r.cancels:
		return why
	case <-time.After(30 * time.Second):
		t.Fatal("the request was never cancelled")
		return ""
	}
}

// askForever starts an ask_user_question call that waits ten minutes.
func (h *mcpHost) askForever(ctx context.Context) {
	go func() {
		_, _ = h.cs.CallTool(ctx, &mcp.CallToolParams{Name: holdover.ToolName, Arguments: map[string]any{
			"timeout":   600,
			"questions": []map[string]any{{"id": "db", "question": "Which database?", "options": []map[string]any{{"label": "PostgreSQL"}, {"label": "SQLite"}}}},
		}})
	}()
}

// TestMCPHostKilledMidWait: the host is SIGKILLed while its question
// waits; its caller lease ends and the question worker ends the wait
// within the release bound (ASK_ABORTED, cancel reason "aborted"). Then a
// restarted host on the same Session repairs the call (TOOL_OUTCOME_UNKNOWN),
// the question stays answerable, and the late answer reaches the
// restarted host's model, once.
func TestMCPHostKilledMidWait(t *testing.T) {
	w := newBridgeWorld(t)
	sid := bridge.NewID("fault")
	client := w.watch(t, sid)
	first := w.startHost(t, sid)
	first.askForever(w.ctx)
	callID := client.request(t).CallID

	killed := time.Now()
	first.kill(t)
	require.Equal(t, "aborted", client.cancel(t), "the worker ended the wait")
	took := time.Since(killed)
	require.Less(t, took, faultBound+faultSlack)
	t.Logf("host SIGKILLed mid-wait: the wait ended %v later (release bound %v)", took.Round(time.Millisecond), faultBound)

	// The restarted host repairs the call as soon as it started, before its
	// model calls anything.
	restarted := w.startHost(t, sid)
	var repaired *events.ToolResult
	require.Eventually(t, func() bool {
		for _, e := range w.events(t, sid) {
			if r, ok := e.Body.(*events.ToolResult); ok && r.CallID == callID {
				repaired = r
			}
		}
		return repaired != nil
	}, faultBound+faultSlack+time.Second, 20*time.Millisecond, "the restarted host repaired the call; its log:\n%s", restarted.stderr)
	require.Equal(t, holdover.CodeToolOutcomeUnknown, repaired.Error.Code)

	w.answer(t, sid, callID, "SQLite") // the question stays answerable
	late := resultText(restarted.call(t, w.ctx, bridge.PendingAnswersTool, map[string]any{}))
	reply, err := events.ParseReply(late)
	require.NoError(t, err, late)
	require.Equal(t, callID, reply.CallID)
	require.Equal(t, []string{"SQLite"}, reply.Answers[0].Selected)
	require.Equal(t, bridge.NoAnswersText, resultText(restarted.call(t, w.ctx, bridge.PendingAnswersTool, map[string]any{})))
	require.Equal(t, 1, admitted(w.events(t, sid), callID))
}

// TestMCPSecondHostRefused: a second host started on a Session whose host
// is alive is refused by the live-root rules, with a message that says so,
// and the first host goes on serving it.
func TestMCPSecondHostRefused(t *testing.T) {
	w := newBridgeWorld(t)
	sid := bridge.NewID("fault")
	first := w.startHost(t, sid)
	require.Equal(t, bridge.NoAnswersText, resultText(first.call(t, w.ctx, bridge.PendingAnswersTool, map[string]any{})))

	second := w.startHost(t, sid)
	res := second.call(t, w.ctx, bridge.PendingAnswersTool, map[string]any{})
	require.True(t, res.IsError)
	text := resultText(res)
	require.True(t, strings.HasPrefix(text, "CONFLICT: "), text)
	require.Contains(t, text, "session "+sid+" is already served by runtime instance")
	require.Contains(t, text, "whose root lease is alive: two runtimes may not serve one Session")
	require.Eventually(t, func() bool { return strings.Contains(second.stderr.String(), "already served by runtime instance") },
		10*time.Second, 10*time.Millisecond, "the host's log says so, from the open at its start")

	require.Equal(t, bridge.NoAnswersText, resultText(first.call(t, w.ctx, bridge.PendingAnswersTool, map[string]any{})))
}
