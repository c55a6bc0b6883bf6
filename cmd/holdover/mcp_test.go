package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/answerer"
	"github.com/holdover-dev/holdover/askuser"
	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/ops/opstest"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/worker"
)

// TestMCPRoundTrip drives the real holdover binary with the Go SDK's MCP
// client over stdio, against a real server and question worker: the tools
// and their schema, bad arguments refused with their code, a question that
// goes pending, its late answer handed over once by pending_answers, and a
// second one handed over by a Claude Code PostToolUse hook fed a fixture.
func TestMCPRoundTrip(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	env := embeddedtest.StartSecure(t, streams.Config{Memory: true})
	wnc, wjs := env.As(t, auth.Worker)
	w := worker.New(wnc, wjs, env.Topology, worker.Config{}, quietLogger())
	opstest.Start(t, ops.Component{Name: "userQuestions", Run: w.Run})
	gnc, _ := env.As(t, auth.Gateway)
	user, err := answerer.New(gnc, answerer.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, user.Close()) })

	bin := filepath.Join(t.TempDir(), "holdover")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	creds := env.Auth.Creds(env.Tenant, auth.Agent)
	url := env.Server.ClientURL()
	const sid = "mcp-test-1"

	client := mcp.NewClient(&mcp.Implementation{Name: "test-host", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(bin, "mcp", "--nats", url, "--creds", creds, "--session", sid, "--claim-bound", "4s")}, nil)
	require.NoError(t, err)
	defer cs.Close()

	tools, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	require.Len(t, tools.Tools, 2)
	want, err := askuser.New(askuser.Config{Mode: askuser.ModeTimed}, user2asker{})
	require.NoError(t, err)
	schema, err := json.Marshal(tools.Tools[0].InputSchema)
	require.NoError(t, err)
	require.Equal(t, holdover.ToolName, tools.Tools[0].Name)
	require.Equal(t, want.Schema().Description, tools.Tools[0].Description)
	require.JSONEq(t, string(want.Schema().InputSchema), string(schema))
	require.Equal(t, "pending_answers", tools.Tools[1].Name)

	call := func(name string, args any) *mcp.CallToolResult {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		require.NoError(t, err)
		return res
	}
	text := func(res *mcp.CallToolResult, i int) string { return res.Content[i].(*mcp.TextContent).Text }
	q := []map[string]any{{"id": "db", "question": "Which database?", "options": []map[string]any{{"label": "PostgreSQL"}, {"label": "SQLite"}}}}

	for args, code := range map[string]string{
		`{"questions":[{"id":"db","question":"Which database?"}],"timeout":0}`:      "BAD_TIMEOUT",
		`{"questions":[{"id":"db","question":"Which database?"}],"timeout":1.5}`:    "BAD_TIMEOUT",
		`{"questions":[{"id":"a","question":"One?"},{"id":"a","question":"Two?"}]}`: "BAD_REQUEST",
		`{"questions":[]}`: "EMPTY_QUESTIONS",
	} {
		res := call(holdover.ToolName, json.RawMessage(args))
		require.True(t, res.IsError, args)
		require.True(t, strings.HasPrefix(text(res, 0), code+": "), "%s: %s", args, text(res, 0))
		sc, _ := json.Marshal(res.StructuredContent)
		require.Contains(t, string(sc), `"code":"`+code+`"`)
	}

	// Pending at the timeout; answered late; handed over once.
	res := call(holdover.ToolName, map[string]any{"questions": q, "timeout": 1})
	require.False(t, res.IsError, text(res, 0))
	var pending holdover.Pending
	require.NoError(t, json.Unmarshal([]byte(text(res, 0)), &pending))
	require.True(t, pending.Pending)
	answer := func(callID, label string) { answerLate(t, ctx, user, sid, callID, label) }
	answer(pending.CallID, "SQLite")
	late := call("pending_answers", map[string]any{})
	require.Len(t, late.Content, 1)
	require.Contains(t, text(late, 0), `"kind":"answer_to_pending_question"`)
	require.Contains(t, text(late, 0), `"selected":["SQLite"]`)
	require.Equal(t, "No late answers are waiting.", text(call("pending_answers", map[string]any{}), 0))

	// A second pending question, answered late, handed over by a hook.
	res = call(holdover.ToolName, map[string]any{"questions": q, "timeout": 1})
	require.NoError(t, json.Unmarshal([]byte(text(res, 0)), &pending))
	answer(pending.CallID, "PostgreSQL")
	hook := func(fixture string, args ...string) (string, string, error) {
		in, err := os.ReadFile(filepath.Join("testdata", "hooks", fixture))
		require.NoError(t, err)
		cmd := exec.Command(bin, append([]string{"hook", "--nats", url, "--creds", creds, "--session", sid, "--timeout", "2s", "--claim-bound", "4s"}, args...)...)
		cmd.Stdin = bytes.NewReader(in)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err = cmd.Run()
		return stdout.String(), stderr.String(), err
	}
	stdout, stderr, err := hook("post-tool-use.json")
	require.NoError(t, err, stderr)
	var got struct {
		HookSpecificOutput struct{ HookEventName, AdditionalContext string }
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &got), stdout)
	require.Equal(t, "PostToolUse", got.HookSpecificOutput.HookEventName)
	require.Contains(t, got.HookSpecificOutput.AdditionalContext, `"selected":["PostgreSQL"]`)
	// Delivered once: the next hook has nothing to say.
	stdout, stderr, err = hook("stop.json")
	require.NoError(t, err, stderr)
	require.Empty(t, stdout)

	// Malformed input and NATS down: one line on stderr, exit 1, nothing lost.
	cmd := exec.Command(bin, "hook", "--nats", url, "--creds", creds)
	cmd.Stdin = strings.NewReader("not json")
	outb, err := cmd.CombinedOutput()
	require.Error(t, err)
	require.Equal(t, 1, strings.Count(strings.TrimSpace(string(outb)), "\n")+1, "%s", outb)
	cmd = exec.Command(bin, "hook", "--nats", "nats://127.0.0.1:1", "--timeout", "1s")
	in, _ := os.ReadFile(filepath.Join("testdata", "hooks", "stop.json"))
	cmd.Stdin = bytes.NewReader(in)
	outb, err = cmd.CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(outb), "unreachable")
}

// user2asker is a question service the schema check never calls.
type user2asker struct{}

func (user2asker) Ask(context.Context, holdover.AskRequest) ([]holdover.Answer, error) {
	return nil, nil
}
func (user2asker) AskTimed(context.Context, holdover.AskTimedRequest) (holdover.Outcome, error) {
	return holdover.Outcome{}, nil
}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
