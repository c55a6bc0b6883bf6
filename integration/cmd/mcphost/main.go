// Command mcphost is the conformance suite's MCP host: an agent whose
// model loop runs outside Holdover, as Claude Code's does, and that takes
// Holdover through `holdover mcp` (its tools, over stdio) and `holdover
// hook` (run at Claude Code's hook points, its output added to the
// conversation as Claude Code adds it). It has the command line of
// `holdover agent`, so the suite drives it like the other runtimes:
//
//	mcphost --holdover BIN --nats URL --creds agent.creds --session S --prompt P
//	        --model-url URL --model NAME [--release-bound 1s]
//
// The prompt is the user's first message, typed into the host; the host
// has no resume pool (--pool and --prompt-creds are accepted and unused).
// With --transcript the host keeps its conversation in that file, and a
// host started again on it resumes the conversation as Claude Code's
// --resume does: a tool call left without a result reads as interrupted,
// and the SessionStart hook runs with source "resume".
// When the model ends its turn and the Stop hook lets it, the host logs
// "the model ended its turn" and idles until SIGTERM.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/holdover-dev/holdover/bridge"
)

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(log); err != nil {
		log.Error("the host stopped", "err", err)
		os.Exit(1)
	}
}

type config struct {
	holdover, nats, creds, session, prompt, modelURL, model, releaseBound, transcript string
}

func run(log *slog.Logger) error {
	var c config
	flag.StringVar(&c.holdover, "holdover", "holdover", "the holdover binary")
	flag.StringVar(&c.nats, "nats", "nats://127.0.0.1:4222", "NATS URL")
	flag.StringVar(&c.creds, "creds", "", "the agent role's credentials")
	flag.StringVar(&c.session, "session", "", "the Holdover Session of this host session")
	flag.StringVar(&c.prompt, "prompt", "", "the user's first message")
	flag.StringVar(&c.modelURL, "model-url", "", "an OpenAI-compatible Chat Completions base URL")
	flag.StringVar(&c.model, "model", "", "the model name")
	flag.StringVar(&c.releaseBound, "release-bound", "2s", "holdover mcp's --release-bound")
	flag.StringVar(&c.transcript, "transcript", "", "keep the conversation in this file, and resume it when it exists")
	flag.String("prompt-creds", "", "unused: the host takes the prompt as typed")
	flag.Bool("pool", false, "unused: a host has no resume pool")
	flag.String("ask-mode", "timed", "unused: holdover mcp's tool is the timed one")
	flag.Parse()
	if c.session == "" || c.modelURL == "" {
		return errors.New("--session and --model-url are required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	server := exec.Command(c.holdover, "mcp", "--nats", c.nats, "--creds", c.creds, "--session", c.session, "--release-bound", c.releaseBound)
	server.Stderr = os.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "conformance-host", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: server}, nil)
	if err != nil {
		return fmt.Errorf("start holdover mcp: %w", err)
	}
	defer cs.Close()
	listed, err := cs.ListTools(ctx, nil)
	if err != nil {
		return err
	}
	h := &host{c: c, cs: cs, log: log}
	for _, t := range listed.Tools {
		h.tools = append(h.tools, map[string]any{"type": "function", "function": map[string]any{
			"name": t.Name, "description": t.Description, "parameters": t.InputSchema}})
	}
	if err := h.turn(ctx); err != nil && ctx.Err() == nil {
		return err
	}
	log.Info("the model ended its turn")
	<-ctx.Done()
	return nil
}

// host is one host session: the conversation, as the host keeps it.
type host struct {
	c     config
	cs    *mcp.ClientSession
	log   *slog.Logger
	tools []map[string]any
	msgs  []message
}

type message struct {
	Role       string     `json:"role"`
	Content    *string    `json:"content"`
	ToolCalls  []toolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

type toolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

func text(s string) *string { return &s }

// interruptedText is what the model reads for a tool call the host was
// killed in.
const interruptedText = "The tool call was interrupted: the host stopped before it returned."

// turn runs the model until it ends its turn and the Stop hook lets it:
// the hooks at SessionStart and UserPromptSubmit (for a new conversation),
// PostToolUse after each tool call, and Stop, whose block goes on with its
// reason.
func (h *host) turn(ctx context.Context) error {
	if h.resume() {
		h.context(ctx, bridge.EventSessionStart, map[string]any{"source": "resume"})
	} else {
		h.context(ctx, bridge.EventSessionStart, map[string]any{"source": "startup"})
		h.add(message{Role: "user", Content: text(h.c.prompt)})
		h.context(ctx, bridge.EventUserPromptSubmit, map[string]any{"prompt": h.c.prompt})
	}
	stopActive := false
	for {
		reply, err := h.complete(ctx)
		if err != nil {
			return err
		}
		h.add(reply)
		if len(reply.ToolCalls) > 0 {
			for _, call := range reply.ToolCalls {
				h.add(message{Role: "tool", ToolCallID: call.ID, Content: text(h.callTool(ctx, call))})
				h.context(ctx, bridge.EventPostToolUse, map[string]any{"tool_name": call.Function.Name, "tool_use_id": call.ID})
			}
			continue
		}
		out := h.hook(ctx, bridge.EventStop, map[string]any{"stop_hook_active": stopActive})
		if out == nil || out.Decision != "block" {
			return nil
		}
		stopActive = true
		h.add(message{Role: "user", Content: text(out.Reason)})
	}
}

// add appends m to the conversation and, with --transcript, to the file.
func (h *host) add(m message) {
	h.msgs = append(h.msgs, m)
	if h.c.transcript == "" {
		return
	}
	data, _ := json.Marshal(h.msgs) // strings and slices of them always encode
	if err := os.WriteFile(h.c.transcript, data, 0o600); err != nil {
		h.log.Warn("keep the transcript", "err", err)
	}
}

// resume loads the transcript, if there is one, and reports whether it
// did; a tool call it left without a result reads as interrupted.
func (h *host) resume() bool {
	if h.c.transcript == "" {
		return false
	}
	data, err := os.ReadFile(h.c.transcript)
	if err != nil || json.Unmarshal(data, &h.msgs) != nil || len(h.msgs) == 0 {
		h.msgs = nil
		return false
	}
	answered := map[string]bool{}
	for _, m := range h.msgs {
		if m.Role == "tool" {
			answered[m.ToolCallID] = true
		}
	}
	for _, m := range slices.Clone(h.msgs) {
		for _, c := range m.ToolCalls {
			if !answered[c.ID] {
				h.add(message{Role: "tool", ToolCallID: c.ID, Content: text(interruptedText)})
			}
		}
	}
	h.log.Info("resumed the conversation", "messages", len(h.msgs))
	return true
}

// callTool calls a tool on holdover mcp; what the model reads is its text.
func (h *host) callTool(ctx context.Context, call toolCall) string {
	var args map[string]any
	if err := json.Unmarshal([]byte(call.Function.Arguments), &args); err != nil {
		return "the arguments are not a JSON object: " + err.Error()
	}
	res, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: call.Function.Name, Arguments: args})
	if err != nil {
		return "the tool call failed: " + err.Error()
	}
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// context runs a hook and adds its additionalContext to the conversation.
func (h *host) context(ctx context.Context, event string, fields map[string]any) {
	if out := h.hook(ctx, event, fields); out != nil && out.HookSpecificOutput != nil {
		h.add(message{Role: "user", Content: text(out.HookSpecificOutput.AdditionalContext)})
	}
}

// hook runs holdover hook on event, as Claude Code runs a command hook:
// the input on stdin, the JSON output on stdout; a failed hook is logged
// and passed over.
func (h *host) hook(ctx context.Context, event string, fields map[string]any) *bridge.HookOutput {
	in := map[string]any{"session_id": h.c.session, "hook_event_name": event, "cwd": "/work/project", "transcript_path": "/work/project/transcript.jsonl"}
	for k, v := range fields {
		in[k] = v
	}
	data, _ := json.Marshal(in) // strings, bools and maps always encode
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.c.holdover, "hook", "--nats", h.c.nats, "--creds", h.c.creds, "--session", h.c.session)
	cmd.Stdin = bytes.NewReader(data)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.Output()
	if err != nil {
		h.log.Warn("the hook failed; going on", "event", event, "err", err)
		return nil
	}
	if len(bytes.TrimSpace(stdout)) == 0 {
		return nil
	}
	var out bridge.HookOutput
	if err := json.Unmarshal(stdout, &out); err != nil {
		h.log.Warn("the hook printed something other than its JSON output", "event", event, "stdout", string(stdout))
		return nil
	}
	return &out
}

// complete asks the model for its next message.
func (h *host) complete(ctx context.Context) (message, error) {
	body, err := json.Marshal(map[string]any{"model": h.c.model, "messages": h.msgs, "tools": h.tools})
	if err != nil {
		return message{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(h.c.modelURL, "/")+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return message{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return message{}, err
	}
	defer resp.Body.Close()
	var out struct {
		Choices []struct {
			Message message `json:"message"`
		} `json:"choices"`
	}
	if resp.StatusCode != http.StatusOK {
		return message{}, fmt.Errorf("the model answered %s", resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Choices) == 0 {
		return message{}, fmt.Errorf("the model's answer has no message: %v", err)
	}
	return out.Choices[0].Message, nil
}
