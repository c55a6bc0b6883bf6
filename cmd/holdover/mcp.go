package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover/askuser"
	"github.com/holdover-dev/holdover/bridge"
	"github.com/holdover-dev/holdover/lease"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/userquestions"
)

const (
	mcpSummary  = "serve ask_user_question to MCP hosts (Claude Code, Cursor, Codex CLI) over stdio or streamable HTTP"
	hookSummary = "a Claude Code hook: hand the host's model the late answers waiting for it (reads the hook input on stdin)"
)

// sessionEnv names the Holdover Session of a host session when no flag
// does; Claude Code sets claudeSessionEnv in the MCP servers and hooks it
// starts to the session id its hook inputs carry.
const (
	sessionEnv       = "HOLDOVER_SESSION"
	claudeSessionEnv = "CLAUDE_CODE_SESSION_ID"
)

// runMCP serves the bridge: `holdover mcp` on stdio, `--http ADDR` on
// streamable HTTP, and `holdover mcp install claude-code`.
func runMCP(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "install" {
		return runMCPInstall(args[1:], stdout, stderr)
	}
	var (
		natsCfg ops.NATSConfig
		logCfg  ops.LogConfig
		cfg     bridge.Config
	)
	fs := newFlags("mcp", "", mcpSummary, stderr)
	natsCfg.RegisterFlags(fs)
	logCfg.RegisterFlags(fs)
	session := fs.String("session", os.Getenv(sessionEnv), "Holdover Session of the host session (env "+sessionEnv+"); default the host's own id ("+claudeSessionEnv+", or the MCP session id over HTTP), else a generated one")
	httpAddr := fs.String("http", "", "serve streamable HTTP on this address (e.g. 127.0.0.1:8765) instead of stdio")
	fs.Int64Var(&cfg.DefaultTimeout, "ask-timeout", askuser.DefaultTimeout, "default timeout in seconds of ask_user_question")
	fs.DurationVar(&cfg.ReleaseBound, "release-bound", lease.DefaultReleaseBound, "how long the root and caller leases outlive this process: how soon a killed host's wait ends")
	fs.DurationVar(&cfg.ClaimBound, "claim-bound", bridge.DefaultClaimBound, "how long a claim holds a late reply for the deliverer that made it")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("mcp takes no arguments, got %q", fs.Args())}
	}
	// stdout is the MCP transport: every log line goes to stderr.
	logger, err := logCfg.Logger(stderr)
	if err != nil {
		return usageError{err.Error()}
	}
	nc, _, err := natsCfg.Connect("holdover-mcp", logger)
	if err != nil {
		return err
	}
	defer nc.Close()
	cfg.Conn, cfg.Logger = nc, logger
	b, err := bridge.New(ctx, cfg)
	if err != nil {
		return err
	}
	defer b.Close()
	if *httpAddr == "" {
		sid := *session
		if sid == "" {
			sid = hostSession(os.Getenv(claudeSessionEnv))
		}
		srv := bridge.NewServer(b, version, func(*mcp.ServerSession) string { return sid })
		defer srv.Close()
		// A session, not a service: it ends, and the process with 0, when
		// the host closes stdin.
		srv.Preopen(ctx, sid)
		logger.Info("serving MCP on stdio", "session", sid, "instance", b.Instance())
		err := srv.MCP().Run(ctx, &mcp.StdioTransport{})
		if ctx.Err() != nil || errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
	srv := bridge.NewServer(b, version, func(ss *mcp.ServerSession) string {
		if *session != "" {
			return *session
		}
		return hostSession(ss.ID())
	})
	defer srv.Close()
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv.MCP() }, nil)
	ln, err := net.Listen("tcp", *httpAddr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "holdover mcp: streamable HTTP on http://%s/\n", ln.Addr())
	return ops.Run(ctx, logger, ops.NATSConnection(nc), ops.Component{Name: "mcp", Run: func(ctx context.Context, ready func()) error {
		// Closed, not shut down: a host's event stream never goes idle.
		hs := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
		closed := make(chan struct{})
		stop := context.AfterFunc(ctx, func() {
			_ = hs.Close()
			close(closed)
		})
		ready()
		err := hs.Serve(ln)
		if !stop() {
			<-closed
		}
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	}})
}

// hostSession is the Holdover Session of a host's own session id: the id
// itself when it is a valid Session id (Claude Code's UUIDs are), else a
// fresh one.
func hostSession(id string) string {
	if id != "" && streams.CheckSession(id) == nil {
		return id
	}
	return bridge.NewID("mcp")
}

// version is what the MCP server reports to hosts.
const version = "0.1.0"

// runHook is `holdover hook`: one Claude Code hook run. Whatever goes
// wrong, it prints one line on stderr and exits 1, which the host reports
// and passes over; the reply stays queued. It never runs past --timeout.
func runHook(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var natsCfg ops.NATSConfig
	fs := newFlags("hook", "", hookSummary, stderr)
	natsCfg.RegisterFlags(fs)
	session := fs.String("session", os.Getenv(sessionEnv), "Holdover Session (env "+sessionEnv+"); default the hook input's session_id")
	timeout := fs.Duration("timeout", 5*time.Second, "the hook's time limit, well under the host's (60 s for Claude Code)")
	claimBound := fs.Duration("claim-bound", bridge.DefaultClaimBound, "how long a claim holds a late reply; the same as holdover mcp's")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *timeout*2 > *claimBound {
		return usageError{fmt.Sprintf("--timeout %s must be at most half of --claim-bound %s, or a slow hook's claim could run out while it runs", *timeout, *claimBound)}
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	// A hard stop: nothing this process waits on may hold the host.
	hard := time.AfterFunc(*timeout+500*time.Millisecond, func() {
		fmt.Fprintf(stderr, "holdover hook: gave up after its %s time limit; any reply stays queued\n", *timeout)
		os.Exit(1)
	})
	defer hard.Stop()

	in, err := bridge.ParseHookInput(os.Stdin)
	if err != nil {
		return err
	}
	if !bridge.Handles(in.HookEventName) {
		return nil
	}
	sid := *session
	if sid == "" {
		sid = in.SessionID
	}
	if err := streams.CheckSession(sid); err != nil {
		return err
	}
	opts, err := natsCfg.Options()
	if err != nil {
		return err
	}
	opts = append(opts, nats.Name("holdover-hook"), nats.Timeout(*timeout/2), nats.NoReconnect())
	nc, err := nats.Connect(natsCfg.URL, opts...)
	if err != nil {
		return fmt.Errorf("NATS at %s is unreachable (%v); any reply stays queued", natsCfg.URL, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	stream, err := js.Stream(ctx, streams.SessionsStream)
	if err != nil {
		return fmt.Errorf("open stream %s: %w", streams.SessionsStream, err)
	}
	l := bridge.NewLog(js, stream, sid, nil, *claimBound)
	open := func(ctx context.Context) ([]projection.Call, error) {
		var v projection.View
		if err := userquestions.Call(ctx, nc, *timeout/2, userquestions.OpView, userquestions.ViewRequest{Session: sid}, &v); err != nil {
			return nil, err
		}
		return v.Active, nil
	}
	return bridge.Hook(ctx, l, in, open, func(out *bridge.HookOutput) error {
		if out == nil {
			return nil
		}
		data, err := json.Marshal(out)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "%s\n", data)
		return err
	})
}

const installUsage = "claude-code"

// runMCPInstall writes (or with --print prints) what a host needs to use
// Holdover: for Claude Code the `claude mcp add` line and the hooks block
// of .claude/settings.json.
func runMCPInstall(args []string, stdout, stderr io.Writer) error {
	var natsCfg ops.NATSConfig
	fs := newFlags("mcp install", installUsage, "set a host up to use holdover mcp and holdover hook", stderr)
	natsCfg.RegisterFlags(fs)
	print := fs.Bool("print", false, "print the command and the settings block instead of running and writing them")
	settings := fs.String("settings", filepath.Join(".claude", "settings.json"), "the Claude Code settings file to add the hooks to")
	bin := fs.String("bin", "holdover", "the holdover binary as the host should run it")
	if len(args) == 0 || args[0] != "claude-code" {
		return usageError{"mcp install takes the host: claude-code (see docs/mcp.md for Cursor, Codex CLI and Claude Desktop)"}
	}
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	flags := hostFlags(natsCfg)
	add := ClaudeMCPAdd(*bin, flags)
	block := ClaudeHooks(*bin, flags)
	if *print {
		fmt.Fprintf(stdout, "# add the MCP server:\n%s\n\n# add to %s:\n%s\n", add, *settings, block)
		return nil
	}
	if err := mergeHooks(*settings, block); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote the Holdover hooks to %s\nnow run:\n  %s\n", *settings, add)
	return nil
}

// hostFlags are the connection flags the host passes to holdover.
func hostFlags(c ops.NATSConfig) string {
	var parts []string
	if c.URL != "" && c.URL != nats.DefaultURL {
		parts = append(parts, "--nats "+c.URL)
	}
	if c.Creds != "" {
		abs, err := filepath.Abs(c.Creds)
		if err == nil {
			c.Creds = abs
		}
		parts = append(parts, "--creds "+c.Creds)
	}
	return strings.Join(parts, " ")
}

// ClaudeMCPAdd is the `claude mcp add` line for holdover mcp.
func ClaudeMCPAdd(bin, flags string) string {
	line := "claude mcp add holdover -- " + bin + " mcp"
	if flags != "" {
		line += " " + flags
	}
	return line
}

// ClaudeHooks is the hooks block of Claude Code's settings.json that runs
// holdover hook on every event it answers.
func ClaudeHooks(bin, flags string) string {
	command := bin + " hook"
	if flags != "" {
		command += " " + flags
	}
	entry := []map[string]any{{"hooks": []map[string]any{{"type": "command", "command": command, "timeout": 10}}}}
	hooks := map[string]any{}
	for _, e := range []string{bridge.EventSessionStart, bridge.EventUserPromptSubmit, bridge.EventPostToolUse, bridge.EventStop} {
		hooks[e] = entry
	}
	data, _ := json.MarshalIndent(map[string]any{"hooks": hooks}, "", "  ") // maps of strings always encode
	return string(data)
}

// sameCommands reports whether two hook entries of a settings file run the
// same commands: an entry installed already is not added again.
func sameCommands(a, b any) bool {
	commands := func(entry any) []string {
		var out []string
		m, _ := entry.(map[string]any)
		hs, _ := m["hooks"].([]any)
		for _, h := range hs {
			if hm, ok := h.(map[string]any); ok {
				c, _ := hm["command"].(string)
				out = append(out, c)
			}
		}
		return out
	}
	return slices.Equal(commands(a), commands(b))
}

// mergeHooks adds block's hooks to the settings file, keeping what it has
// and adding none it has already.
func mergeHooks(path, block string) error {
	settings := map[string]any{}
	if data, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(data, &settings); err != nil {
			return fmt.Errorf("%s is not JSON: %w", path, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	var add map[string]map[string][]any
	if err := json.Unmarshal([]byte(block), &add); err != nil {
		return err
	}
	hooks, _ := settings["hooks"].(map[string]any)
	if hooks == nil {
		hooks = map[string]any{}
	}
	for event, entries := range add["hooks"] {
		have, _ := hooks[event].([]any)
		for _, e := range entries {
			if !slices.ContainsFunc(have, func(h any) bool { return sameCommands(h, e) }) {
				have = append(have, e)
			}
		}
		hooks[event] = have
	}
	settings["hooks"] = hooks
	data, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
