package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/answerer"
	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/bridge"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/sessionlog"
	"github.com/holdover-dev/holdover/streams"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden hook outputs in testdata/hooks")

// The hook tests' claim bound and time limit: short, so the claim a killed
// hook left runs out within the test, and the time limit at most half of it
// as holdover hook requires.
const (
	hookClaimBound = 4 * time.Second
	hookTimeout    = 2 * time.Second
)

// bridgeWorld is a `holdover dev` with an in-process bridge on the agent's
// credentials that leaves late replies queued for hooks, a user who
// answers through a gateway, and the holdover binary the hosts and hooks
// run as processes.
type bridgeWorld struct {
	ctx    context.Context
	dev    devServer
	bin    string
	bridge *bridge.Bridge
	user   *answerer.Client
	log    *sessionlog.Log
}

func newBridgeWorld(t *testing.T) *bridgeWorld {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	w := &bridgeWorld{ctx: ctx, dev: startDev(t, "--no-demo"), bin: buildHoldover(t)}
	w.user = newUser(t, w.dev)
	nc := w.conn(t, auth.Agent)
	b, err := bridge.New(ctx, bridge.Config{Conn: nc, ReleaseBound: time.Second, ClaimBound: hookClaimBound, Logger: quietLogger()})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	w.bridge = b
	js := w.dev.as(t, auth.Operator)
	sessions, err := js.Stream(ctx, streams.SessionsStream)
	require.NoError(t, err)
	w.log = sessionlog.NewDirect(js, sessions) // an operator reads by direct get: it creates no consumer
	return w
}

// buildHoldover builds this command for the test to run as a process.
func buildHoldover(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "holdover")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

// conn connects to the dev server on role r's credentials.
func (w *bridgeWorld) conn(t *testing.T, r auth.Role) *nats.Conn {
	t.Helper()
	opts, err := ops.NATSConfig{Creds: w.dev.creds(r)}.Options()
	require.NoError(t, err)
	nc, _ := embeddedtest.Connect(t, w.dev.url, opts...)
	return nc
}

// newUser is a user's Client on a gateway's credentials.
func newUser(t *testing.T, dev devServer) *answerer.Client {
	t.Helper()
	opts, err := ops.NATSConfig{Creds: dev.creds(auth.Gateway)}.Options()
	require.NoError(t, err)
	nc, _ := embeddedtest.Connect(t, dev.url, opts...)
	user, err := answerer.New(nc, answerer.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, user.Close()) })
	return user
}

// host opens Session sid on the bridge, as holdover mcp does at a host's
// first tool call.
func (w *bridgeWorld) host(t *testing.T, sid string) *bridge.Host {
	t.Helper()
	h, err := w.bridge.Open(w.ctx, sid)
	require.NoError(t, err)
	t.Cleanup(func() { h.Release(context.Background()) })
	return h
}

// pending asks the suite's question on h with a 1 s timeout and returns
// the call id of its pending result.
func (w *bridgeWorld) pending(t *testing.T, h *bridge.Host, question string) string {
	t.Helper()
	args, err := json.Marshal(map[string]any{"timeout": 1, "questions": []map[string]any{{"id": "db", "question": question,
		"options": []map[string]any{{"label": "PostgreSQL"}, {"label": "SQLite"}}}}})
	require.NoError(t, err)
	out, err := h.Ask(w.ctx, args)
	require.NoError(t, err)
	var p holdover.Pending
	require.NoError(t, json.Unmarshal([]byte(out.Result.Text), &p), out.Result.Text)
	require.True(t, p.Pending, out.Result.Text)
	return p.CallID
}

// answer answers call callID of sid late, as a user's Client does.
func (w *bridgeWorld) answer(t *testing.T, sid, callID, label string) {
	t.Helper()
	answerLate(t, w.ctx, w.user, sid, callID, label)
}

// answerLate answers question db of call callID with label through user,
// once the question service knows the call is pending.
func answerLate(t *testing.T, ctx context.Context, user *answerer.Client, sid, callID, label string) {
	t.Helper()
	require.Eventually(t, func() bool {
		r, err := user.Answer(ctx, holdover.AnswerRequest{Session: sid, CallID: callID, Answers: []holdover.Answer{{ID: "db", Selected: []string{label}}}})
		return err == nil && r.Accepted
	}, 10*time.Second, 20*time.Millisecond)
}

// queued leaves a late reply queued for Session sid: a pending question
// answered late. It returns the call id.
func (w *bridgeWorld) queued(t *testing.T, sid string) string {
	t.Helper()
	callID := w.pending(t, w.host(t, sid), "Which database?")
	w.answer(t, sid, callID, "SQLite")
	return callID
}

// hookRun is one holdover hook process's outcome.
type hookRun struct {
	stdout, stderr string
	code           int
	took           time.Duration
}

// hook runs holdover hook on the fixture of event (testdata/hooks) for
// Session sid, through NATS at url.
func (w *bridgeWorld) hook(t *testing.T, url, fixture, sid string) hookRun {
	t.Helper()
	cmd := w.hookCmd(t, url, fixture, sid)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	run := hookRun{stdout: stdout.String(), stderr: stderr.String(), took: time.Since(start)}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		run.code = exit.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return run
}

func (w *bridgeWorld) hookCmd(t *testing.T, url, fixture, sid string) *exec.Cmd {
	t.Helper()
	in, err := os.ReadFile(filepath.Join("testdata", "hooks", fixture))
	require.NoError(t, err)
	args := []string{"hook", "--nats", url, "--creds", w.dev.creds(auth.Agent), "--timeout", hookTimeout.String(), "--claim-bound", hookClaimBound.String()}
	if sid != "" {
		args = append(args, "--session", sid)
	}
	cmd := exec.Command(w.bin, args...)
	cmd.Env = append(os.Environ(), sessionEnv+"=") // the Session is the flag's or the input's
	cmd.Stdin = bytes.NewReader(in)
	return cmd
}

// events reads sid's log.
func (w *bridgeWorld) events(t *testing.T, sid string) []events.Event {
	t.Helper()
	evts, _, err := w.log.Read(w.ctx, sid, 0)
	require.NoError(t, err)
	return evts
}

// admitted counts the user/message events admitting a late answer to callID.
func admitted(evts []events.Event, callID string) int {
	n := 0
	for _, e := range evts {
		if m, ok := e.Body.(*events.UserMessage); ok && m.Message.Source.IsQuestionReply() && m.Message.Source.CallID == callID {
			n++
		}
	}
	return n
}

// claimsOf returns the agent/inbox/claimed events of sid's log.
func claimsOf(evts []events.Event) []events.Event {
	var out []events.Event
	for _, e := range evts {
		if _, ok := e.Body.(*events.InboxClaimed); ok {
			out = append(out, e)
		}
	}
	return out
}

// requireGolden checks the hook's output against testdata/hooks/<name>,
// in which each call id stands as its placeholder.
func requireGolden(t *testing.T, name, got string, placeholders map[string]string) {
	t.Helper()
	for placeholder, id := range placeholders {
		got = strings.ReplaceAll(got, id, placeholder)
	}
	path := filepath.Join("testdata", "hooks", name)
	if *updateGolden {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, string(want), got)
}

// TestHookOutputs runs holdover hook on each recorded Claude Code hook
// input with a late reply queued and checks the exact JSON it prints, the
// admission it records, and that the next hook has nothing more to say.
// SessionStart also lists the question still open.
func TestHookOutputs(t *testing.T) {
	w := newBridgeWorld(t)
	for _, event := range []string{"post-tool-use", "user-prompt-submit", "stop", "session-start"} {
		t.Run(event, func(t *testing.T) {
			sid := bridge.NewID("hook")
			h := w.host(t, sid)
			placeholders := map[string]string{}
			if event == "session-start" {
				// Asked first, so the later ask's result hands nothing over.
				open := w.pending(t, h, "Which port?")
				placeholders["CALL_OPEN"] = open
				require.Eventually(t, func() bool {
					v, err := w.user.View(w.ctx, sid)
					return err == nil && slices.ContainsFunc(v.Active, func(c projection.Call) bool { return c.CallID == open && c.Status == projection.Continued })
				}, 10*time.Second, 20*time.Millisecond, "the projection shows the call open, continued after its pending result")
			}
			callID := w.pending(t, h, "Which database?")
			w.answer(t, sid, callID, "SQLite")
			placeholders["CALL_ANSWERED"] = callID
			run := w.hook(t, w.dev.url, event+".json", sid)
			require.Equal(t, 0, run.code, run.stderr)
			require.Empty(t, run.stderr)
			requireGolden(t, event+".out.json", run.stdout, placeholders)
			evts := w.events(t, sid)
			require.Equal(t, 1, admitted(evts, callID), "the delivery is recorded as the admission")

			again := w.hook(t, w.dev.url, event+".json", sid)
			require.Equal(t, 0, again.code, again.stderr)
			if event == "session-start" {
				require.NotContains(t, again.stdout, callID, "delivered once")
				require.Contains(t, again.stdout, placeholders["CALL_OPEN"], "still open")
			} else {
				require.Empty(t, again.stdout, "delivered once: the next hook says nothing")
			}
			require.Equal(t, 1, admitted(w.events(t, sid), callID))
		})
	}
}

// TestHookRaceDeliversOnce runs four hooks at once on one queued reply:
// exactly one prints it, the others print nothing, and the log records one
// claim and one admission.
func TestHookRaceDeliversOnce(t *testing.T) {
	w := newBridgeWorld(t)
	sid := bridge.NewID("hook")
	callID := w.queued(t, sid)
	runs := make([]hookRun, 4)
	var wg sync.WaitGroup
	for i := range runs {
		wg.Go(func() { runs[i] = w.hook(t, w.dev.url, "post-tool-use.json", sid) })
	}
	wg.Wait()
	delivered := 0
	for _, r := range runs {
		require.Equal(t, 0, r.code, r.stderr)
		if r.stdout != "" {
			delivered++
			require.Contains(t, r.stdout, callID)
		}
	}
	require.Equal(t, 1, delivered, "exactly one hook delivers the reply: %+v", runs)
	evts := w.events(t, sid)
	require.Equal(t, 1, admitted(evts, callID))
	require.Len(t, claimsOf(evts), 1)
}

// TestHookFailsOpen: malformed input, and NATS down, each make the hook
// print one line on stderr and exit 1 within its time limit, so the host
// goes on; the reply stays queued and the next hook delivers it.
func TestHookFailsOpen(t *testing.T) {
	w := newBridgeWorld(t)
	sid := bridge.NewID("hook")
	callID := w.queued(t, sid)
	oneLine := func(t *testing.T, r hookRun, want string) {
		t.Helper()
		require.Equal(t, 1, r.code, "stdout %q stderr %q", r.stdout, r.stderr)
		require.Empty(t, r.stdout)
		require.Equal(t, 1, strings.Count(r.stderr, "\n"), "one line: %q", r.stderr)
		require.Contains(t, r.stderr, want)
		require.Less(t, r.took, hookTimeout+time.Second, "within the hook's time limit")
	}
	for name, c := range map[string]struct{ input, want string }{
		"not JSON":      {"not json", "the hook input is not a JSON object"},
		"truncated":     {`{"session_id":"` + sid + `","hook_event_name":"Stop"`, "the hook input is not a JSON object"},
		"not an object": {`["Stop"]`, "the hook input is not a JSON object"},
		"empty":         {"", "the hook input is not a JSON object"},
		"no event":      {`{"session_id":"` + sid + `"}`, "the hook input has no hook_event_name"},
		"no session":    {`{"hook_event_name":"Stop"}`, "the hook input has no session_id"},
	} {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(w.bin, "hook", "--nats", w.dev.url, "--creds", w.dev.creds(auth.Agent), "--timeout", hookTimeout.String(), "--claim-bound", hookClaimBound.String())
			cmd.Env = append(os.Environ(), sessionEnv+"=")
			cmd.Stdin = strings.NewReader(c.input)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			start := time.Now()
			err := cmd.Run()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit)
			oneLine(t, hookRun{stdout: stdout.String(), stderr: stderr.String(), code: exit.ExitCode(), took: time.Since(start)}, c.want)
		})
	}
	t.Run("NATS down", func(t *testing.T) {
		proxy := embeddedtest.NewProxy(t, w.dev.url)
		proxy.Cut()
		oneLine(t, w.hook(t, proxy.URL(), "stop.json", sid), "unreachable")
	})
	require.Zero(t, admitted(w.events(t, sid), callID), "nothing was delivered")
	run := w.hook(t, w.dev.url, "stop.json", sid)
	require.Equal(t, 0, run.code, run.stderr)
	require.Contains(t, run.stdout, callID, "the reply stayed queued")
	require.Equal(t, 1, admitted(w.events(t, sid), callID))
}
