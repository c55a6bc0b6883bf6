package holdover

import "encoding/json"

// ToolName is the model-facing name of the question tool.
const ToolName = "ask_user_question"

// ToolArgs are the arguments of an ask_user_question call. Timeout, in
// seconds, exists only in the timed schema (M2).
type ToolArgs struct {
	Questions []Question `json:"questions"`
	Timeout   *int64     `json:"timeout,omitempty"`
	Intent    *Intent    `json:"intent,omitempty"`
}

// ToolResult is one tool call's outcome: the text the model reads, and
// for a failure (IsError) its stable code. The question tool, the agent
// runtime's tools and run_code's sub-calls all return it, and the runtime
// records it as tool/result or tool/ptc-dispatch.
type ToolResult struct {
	Text    string
	IsError bool
	// Code is set on failures only.
	Code Code
}

// Pending is the tool result of a timed call whose wait ended without an
// answer batch (M6).
type Pending struct {
	Pending bool   `json:"pending"`
	CallID  string `json:"callId"`
	Message string `json:"message"`
}

// ParsePending reports whether text is a pending tool result.
func ParsePending(text string) (Pending, bool) {
	var p Pending
	if json.Unmarshal([]byte(text), &p) != nil || !p.Pending {
		return Pending{}, false
	}
	return p, true
}
