package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/auth"
)

// settingsHooks is the hooks part of a Claude Code settings.json.
type settingsHooks struct {
	Hooks map[string][]struct {
		Hooks []struct {
			Type    string `json:"type"`
			Command string `json:"command"`
			Timeout int    `json:"timeout"`
		} `json:"hooks"`
	} `json:"hooks"`
}

// hookEvents are the Claude Code events holdover hook answers.
var hookEvents = []string{"PostToolUse", "SessionStart", "Stop", "UserPromptSubmit"}

// TestMCPInstallPrint: --print prints the claude mcp add line and the
// hooks block, with the connection flags the host must pass (the creds
// made absolute, so the host finds them from any folder).
func TestMCPInstallPrint(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	code, stdout, stderr := cli(t, "mcp", "install", "claude-code", "--print", "--nats", "nats://127.0.0.1:4333", "--creds", "agent.creds")
	require.Equal(t, 0, code, stderr)
	flags := "--nats nats://127.0.0.1:4333 --creds " + filepath.Join(dir, "agent.creds")
	add, block, ok := strings.Cut(stdout, "\n\n# add to .claude/settings.json:\n")
	require.True(t, ok, stdout)
	require.Equal(t, "# add the MCP server:\nclaude mcp add holdover -- holdover mcp "+flags, add)
	var s settingsHooks
	require.NoError(t, json.Unmarshal([]byte(block), &s), block)
	require.Len(t, s.Hooks, len(hookEvents))
	for _, e := range hookEvents {
		require.Len(t, s.Hooks[e], 1, e)
		require.Len(t, s.Hooks[e][0].Hooks, 1, e)
		h := s.Hooks[e][0].Hooks[0]
		require.Equal(t, "command", h.Type)
		require.Equal(t, "holdover hook "+flags, h.Command)
		require.Equal(t, 10, h.Timeout, "the host's limit, above the hook's own 5 s")
	}
	_, err := os.Stat(filepath.Join(dir, ".claude"))
	require.ErrorIs(t, err, os.ErrNotExist, "--print writes nothing")

	code, _, stderr = cli(t, "mcp", "install", "cursor")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "docs/mcp.md for Cursor, Codex CLI and Claude Desktop")
}

// TestMCPInstallMergesSettings: install adds the hooks to a settings file,
// keeps what it held (other settings, the user's own hooks on the same
// events), and a second install changes nothing.
func TestMCPInstallMergesSettings(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".claude", "settings.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	// The user's own Stop hook names holdover too; it is not taken for ours.
	own := `{"permissions":{"allow":["Bash(ls)"]},"hooks":{"Stop":[{"hooks":[{"type":"command","command":"notify-send 'holdover hook done'"}]}]}}`
	require.NoError(t, os.WriteFile(path, []byte(own), 0o644))
	code, stdout, stderr := cli(t, "mcp", "install", "claude-code", "--settings", path, "--bin", "/opt/holdover")
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "wrote the Holdover hooks to "+path+"\nnow run:\n  claude mcp add holdover -- /opt/holdover mcp\n", stdout)
	first, err := os.ReadFile(path)
	require.NoError(t, err)
	var all map[string]any
	require.NoError(t, json.Unmarshal(first, &all))
	require.Equal(t, map[string]any{"allow": []any{"Bash(ls)"}}, all["permissions"])
	var s settingsHooks
	require.NoError(t, json.Unmarshal(first, &s))
	for _, e := range hookEvents {
		last := s.Hooks[e][len(s.Hooks[e])-1].Hooks[0]
		require.Equal(t, "/opt/holdover hook", last.Command, e)
	}
	require.Len(t, s.Hooks["Stop"], 2)
	require.Equal(t, "notify-send 'holdover hook done'", s.Hooks["Stop"][0].Hooks[0].Command, "the user's own hook stays first")

	code, _, stderr = cli(t, "mcp", "install", "claude-code", "--settings", path, "--bin", "/opt/holdover")
	require.Equal(t, 0, code, stderr)
	again, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, string(first), string(again), "installed once")
}

// TestDevPrintsTheClaudeCodeLine: holdover dev prints the claude mcp add
// line and the install command for its own NATS and the agent's
// credentials; the server command of that line serves the tools, and the
// hook command the install writes runs on a Claude Code hook input.
func TestDevPrintsTheClaudeCodeLine(t *testing.T) {
	dev := startDev(t, "--no-demo")
	flags := "--nats " + dev.url + " --creds " + dev.creds(auth.Agent)
	add := "claude mcp add holdover -- holdover mcp " + flags
	install := "holdover mcp install claude-code " + flags
	require.Contains(t, dev.banner, "\n  "+add+"\n")
	require.Contains(t, dev.banner, "\n  "+install+"\n")

	bin := buildHoldover(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	server := strings.Fields(strings.SplitN(add, " -- ", 2)[1])
	client := mcp.NewClient(&mcp.Implementation{Name: "claude-code-line", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(bin, server[1:]...)}, nil)
	require.NoError(t, err)
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	require.Len(t, tools.Tools, 2)

	settings := filepath.Join(t.TempDir(), "settings.json")
	args := append(strings.Fields(install)[1:], "--settings", settings, "--bin", bin)
	code, _, stderr := cli(t, args...)
	require.Equal(t, 0, code, stderr)
	data, err := os.ReadFile(settings)
	require.NoError(t, err)
	var s settingsHooks
	require.NoError(t, json.Unmarshal(data, &s))
	in, err := os.ReadFile(filepath.Join("testdata", "hooks", "user-prompt-submit.json"))
	require.NoError(t, err)
	hook := exec.CommandContext(ctx, "sh", "-c", s.Hooks["UserPromptSubmit"][0].Hooks[0].Command)
	hook.Stdin = bytes.NewReader(in)
	out, err := hook.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Empty(t, out, "nothing waits in a fresh Session")
}
