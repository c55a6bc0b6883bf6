package worker_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"os"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/caller"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/ops/opstest"
	"github.com/holdover-dev/holdover/sessionlog"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/worker"
)

// The tool schemas a runtime declares in its request/header: the timed
// one has a timeout property (D2), the legacy one none (M1).
var (
	timedTool  = events.ToolSchema{Name: holdover.ToolName, InputSchema: json.RawMessage(`{"type":"object","properties":{"questions":{"type":"array"},"timeout":{"type":"integer"}}}`)}
	legacyTool = events.ToolSchema{Name: holdover.ToolName, InputSchema: json.RawMessage(`{"type":"object","properties":{"questions":{"type":"array"}}}`)}
)

const askQuestion = `{"id":"q1","question":"Ship it?"}`

// W9: a timed call the Session's log does not track is refused
// UNTRACKED_CALL, with the cause, where it would go pending, since no
// answer could reach it after its wait; a tracked call goes pending, and
// so does one in a Session with no log. Each untracked case is counted
// under type askTimed.
func TestAskTimedRefusesACallTheLogDoesNotTrack_W9(t *testing.T) {
	env := embeddedtest.Start(t, streams.Config{Memory: true})
	clock := clockwork.NewFakeClock()
	metrics := ops.NewMetrics()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	svc := worker.New(env.Conn, env.JS, env.Topology, worker.Config{Clock: clock, Metrics: metrics, ReleaseBound: time.Second}, log)
	opstest.Start(t, ops.Component{Name: "userQuestions", Run: svc.Run})
	agentNC, _ := embeddedtest.Connect(t, env.Server.ClientURL())
	agent, err := caller.New(context.Background(), agentNC, caller.Config{ReleaseBound: time.Second, Log: log})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, agent.Close()) })
	sessions := sessionlog.New(env.JS, env.Topology.Sessions)

	call := func(args string) events.Body {
		return &events.ToolCall{Turn: "t1", CallID: "c1", Name: holdover.ToolName, Arguments: json.RawMessage(args)}
	}
	header := func(tool events.ToolSchema) events.Body {
		return &events.RequestHeader{Turn: "t1", Tools: []events.ToolSchema{tool}}
	}
	cases := []struct {
		name   string
		log    []events.Body
		reason string // "" when the call is tracked
		detail string // what the refusal's message names
	}{
		{"tracked", []events.Body{header(timedTool), call(`{"questions":[` + askQuestion + `],"timeout":30}`)}, "", ""},
		{"no log: goes pending", nil, "no_log", ""},
		{"a sub-call of an open run_code call (D4)", []events.Body{header(timedTool), &events.ToolCall{Turn: "t1", CallID: "code-1", Name: "run_code", Arguments: json.RawMessage(`{"code":"1"}`)}}, "", ""},
		{"no tool/call", []events.Body{header(timedTool)}, "no_call", `records no ask_user_question tool/call with callId "c1"`},
		{"timeout 1.5", []events.Body{header(timedTool), call(`{"questions":[` + askQuestion + `],"timeout":1.5}`)}, "invalid_arguments", "timeout is in seconds, -1 (until answered) or 1–2147483; got 1.5"},
		{"timeout 0", []events.Body{header(timedTool), call(`{"questions":[` + askQuestion + `],"timeout":0}`)}, "invalid_arguments", "got 0"},
		{"timeout 2147484", []events.Body{header(timedTool), call(`{"questions":[` + askQuestion + `],"timeout":2147484}`)}, "invalid_arguments", "got 2147484"},
		{`timeout "5"`, []events.Body{header(timedTool), call(`{"questions":[` + askQuestion + `],"timeout":"5"}`)}, "invalid_arguments", `got "5"`},
		{"duplicate question ids", []events.Body{header(timedTool), call(`{"questions":[` + askQuestion + `,` + askQuestion + `]}`)}, "invalid_arguments", `question id "q1" is used twice`},
		{"empty batch", []events.Body{header(timedTool), call(`{"questions":[]}`)}, "invalid_arguments", "/questions"},
		{"legacy header", []events.Body{header(legacyTool), call(`{"questions":[` + askQuestion + `]}`)}, "legacy_header", "without a timeout property"},
		{"no header", []events.Body{call(`{"questions":[` + askQuestion + `]}`)}, "legacy_header", "follows no request/header"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sid := "tracked-" + string(rune('a'+i))
			var last uint64
			for _, b := range tc.log {
				last, err = sessions.Append(context.Background(), sid, last, events.New(time.Now(), b))
				require.NoError(t, err)
			}
			before := rejected(t, metrics, "askTimed", tc.reason)
			epoch, err := svc.Roots().Register(context.Background(), sid, "runtime-"+sid)
			require.NoError(t, err)
			done := make(chan error, 1)
			go func() {
				_, err := agent.AskTimed(context.Background(), holdover.AskTimedRequest{
					Session: sid, CallID: "c1", Agent: &holdover.AgentRef{Instance: "runtime-" + sid, Epoch: epoch},
					Questions: []holdover.Question{{ID: "q1", Question: "Ship it?"}}, TimeoutMs: 30_000,
				})
				done <- err
			}()
			// The wait runs to its deadline, where it would go pending.
			require.Eventually(t, func() bool { return svc.LiveWaits() == 1 }, 10*time.Second, time.Millisecond)
			clock.Advance(31 * time.Second)
			refused := tc.reason != "" && tc.reason != "no_log"
			var err2 error
			select {
			case err2 = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("askTimed did not end")
			}
			if refused {
				require.Error(t, err2)
				t.Logf("refused: %v", err2)
				assert.Equal(t, holdover.CodeUntrackedCall, holdover.CodeOf(err2), "%v", err2)
				assert.Contains(t, err2.Error(), tc.detail)
				assert.Contains(t, err2.Error(), "("+tc.reason+")")
			} else {
				require.NoError(t, err2, "the wait went pending")
			}
			if tc.reason != "" {
				assert.Equal(t, before+1, rejected(t, metrics, "askTimed", tc.reason))
			}
			require.Eventually(t, func() bool { return svc.LiveWaits() == 0 }, 10*time.Second, time.Millisecond)
		})
	}
}

// rejected reads holdover_events_rejected_total{type, reason}.
func rejected(t *testing.T, m *ops.Metrics, typ, reason string) float64 {
	t.Helper()
	return counted(t, m, "holdover_events_rejected_total", map[string]string{"type": typ, "reason": reason})
}

// counted reads the counter name of m under labels, 0 when it has not
// counted yet.
func counted(t *testing.T, m *ops.Metrics, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := m.Registry.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, s := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range s.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			if maps.Equal(have, labels) {
				return s.GetCounter().GetValue()
			}
		}
	}
	return 0
}
