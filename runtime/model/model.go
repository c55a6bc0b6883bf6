// Package model is the contract between the agent runtime and a language
// model: the conversation and tool schemas go in, assistant text and tool
// calls come out.
//
// It owns only these shapes. It never records events, runs tools or talks
// to NATS; the runtime does that around every [Model.Complete] call, so a
// model implementation stays a pure function of its request.
package model

import (
	"context"
	"encoding/json"

	"github.com/holdover-dev/holdover/events"
)

// Role says who spoke a message.
type Role string

// The roles of a conversation.
const (
	User      Role = "user"
	Assistant Role = "assistant"
	// Tool is the result of one tool call, answering an assistant call by id.
	Tool Role = "tool"
)

// Message is one entry of the conversation the model reads.
type Message struct {
	Role Role
	Text string
	// ToolCalls are the calls an assistant message made.
	ToolCalls []ToolCall
	// ToolCallID and ToolName name the call a tool message answers.
	ToolCallID string
	ToolName   string
	// IsError marks a tool message that reports a failed call.
	IsError bool
}

// ToolCall is one call a model asks the runtime to make.
type ToolCall struct {
	ID        string
	Name      string
	Arguments json.RawMessage
}

// Request is one model request: the system prompt, the conversation so far
// and the tools on offer. The runtime records Tools in the request/header
// event before it sends the request.
type Request struct {
	System   string
	Messages []Message
	Tools    []events.ToolSchema
}

// Response is the model's answer to one request: text to show, tool calls
// to make, or both. A response without tool calls ends the Turn unless new
// input is waiting.
type Response struct {
	Text      string
	ToolCalls []ToolCall
}

// Model completes requests. Implementations must be safe for concurrent
// use, because one model serves every Session of a runtime process, and
// must keep no per-Session state: everything they need is in the request,
// so a Session resumed from its log gets the same answers.
type Model interface {
	// Name identifies the model in request/header events.
	Name() string
	// Complete answers one request.
	Complete(ctx context.Context, req Request) (Response, error)
}
