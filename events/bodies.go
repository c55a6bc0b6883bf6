package events

import (
	"encoding/json"

	"github.com/holdover-dev/holdover"
)

// ToolSchema is one tool as a model request offered it.
type ToolSchema struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
}

// RequestHeader records one model request: the model and the tool schemas
// it was offered. The question projection reads it to tell timed from
// legacy calls (D2).
type RequestHeader struct {
	Turn  string       `json:"turn,omitempty"`
	Model string       `json:"model,omitempty"`
	Tools []ToolSchema `json:"tools"`
}

func (*RequestHeader) EventType() Type { return TypeRequestHeader }
func (h *RequestHeader) Validate() error {
	for i, t := range h.Tools {
		if t.Name == "" {
			return holdover.Newf(holdover.CodeBadRequest, "request/header tool %d has no name", i+1)
		}
	}
	return nil
}

// Part is one piece of message content. Only text parts exist today.
type Part struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// Text returns content as one text part.
func Text(s string) []Part { return []Part{{Type: "text", Text: s}} }

// JoinText concatenates the text of parts.
func JoinText(parts []Part) string {
	if len(parts) == 1 {
		return parts[0].Text
	}
	var n int
	for _, p := range parts {
		n += len(p.Text)
	}
	buf := make([]byte, 0, n)
	for _, p := range parts {
		buf = append(buf, p.Text...)
	}
	return string(buf)
}

// AssistantMessage records model text shown in the transcript.
type AssistantMessage struct {
	Turn    string `json:"turn,omitempty"`
	ID      string `json:"id"`
	Content []Part `json:"content"`
}

func (*AssistantMessage) EventType() Type { return TypeAssistantMessage }
func (m *AssistantMessage) Validate() error {
	return required("assistant/message", "id", m.ID)
}

// ToolCall records a model's tool call before it runs. Arguments are kept
// as recorded; whether they are valid is the reader's question.
type ToolCall struct {
	Turn      string          `json:"turn,omitempty"`
	CallID    string          `json:"callId"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

func (*ToolCall) EventType() Type { return TypeToolCall }
func (c *ToolCall) Validate() error {
	if err := required("tool/call", "callId", c.CallID); err != nil {
		return err
	}
	return required("tool/call", "name", c.Name)
}

// ToolError is the structured error of a failed tool call.
type ToolError struct {
	Name string        `json:"name,omitempty"`
	Code holdover.Code `json:"code,omitempty"`
}

// ToolResult records the outcome of a tool call.
type ToolResult struct {
	Turn    string     `json:"turn,omitempty"`
	CallID  string     `json:"callId"`
	Name    string     `json:"name,omitempty"`
	Content []Part     `json:"content"`
	IsError bool       `json:"isError,omitempty"`
	Error   *ToolError `json:"error,omitempty"`
}

func (*ToolResult) EventType() Type   { return TypeToolResult }
func (r *ToolResult) Validate() error { return required("tool/result", "callId", r.CallID) }

// PTCDispatch records one tool call made from inside run_code (programmatic
// tool calling) and its outcome.
type PTCDispatch struct {
	Turn         string          `json:"turn,omitempty"`
	ParentCallID string          `json:"parentCallId"`
	CallID       string          `json:"callId"`
	Name         string          `json:"name"`
	Arguments    json.RawMessage `json:"arguments"`
	Content      []Part          `json:"content"`
	IsError      bool            `json:"isError,omitempty"`
	Error        *ToolError      `json:"error,omitempty"`
}

func (*PTCDispatch) EventType() Type { return TypePTCDispatch }
func (d *PTCDispatch) Validate() error {
	for _, f := range [][2]string{{"parentCallId", d.ParentCallID}, {"callId", d.CallID}, {"name", d.Name}} {
		if err := required("tool/ptc-dispatch", f[0], f[1]); err != nil {
			return err
		}
	}
	return nil
}

// Message is a user or agent message as the agent's context holds it.
type Message struct {
	ID      string `json:"id"`
	Role    string `json:"role"`
	Content []Part `json:"content"`
	Source  Source `json:"source"`
}

// Validate checks the message's id, role and source.
func (m *Message) Validate() error {
	if err := required("message", "id", m.ID); err != nil {
		return err
	}
	if err := required("message", "role", m.Role); err != nil {
		return err
	}
	return m.Source.Validate()
}

// UserMessage records a message admitted into the agent's context.
type UserMessage struct {
	Turn    string  `json:"turn,omitempty"`
	Message Message `json:"message"`
}

func (*UserMessage) EventType() Type   { return TypeUserMessage }
func (u *UserMessage) Validate() error { return u.Message.Validate() }

// InboxSpliced records that a queued inbox message entered the agent's
// pending inbox. It carries the message, so a restarted runtime can
// restore it.
type InboxSpliced struct {
	Turn    string  `json:"turn,omitempty"`
	Message Message `json:"message"`
	// InboxSeq is the stream sequence the message was read from (in
	// SESSIONS, where the inbox subjects are beside the log).
	InboxSeq uint64 `json:"inboxSeq,omitempty"`
}

func (*InboxSpliced) EventType() Type   { return TypeInboxSpliced }
func (s *InboxSpliced) Validate() error { return s.Message.Validate() }

// InboxClaimed records that the agent took a spliced message for its next
// step; admission follows as a user/message with the same message id.
type InboxClaimed struct {
	Turn      string `json:"turn,omitempty"`
	MessageID string `json:"messageId"`
}

func (*InboxClaimed) EventType() Type { return TypeInboxClaimed }
func (c *InboxClaimed) Validate() error {
	return required("agent/inbox/claimed", "messageId", c.MessageID)
}

// InboxDiscarded records that a queued message was dropped unadmitted.
type InboxDiscarded struct {
	Turn      string `json:"turn,omitempty"`
	MessageID string `json:"messageId"`
	Reason    string `json:"reason,omitempty"`
}

func (*InboxDiscarded) EventType() Type { return TypeInboxDiscarded }
func (d *InboxDiscarded) Validate() error {
	return required("agent/inbox/discarded", "messageId", d.MessageID)
}

// TurnStart opens a Turn: one run of the agent's step loop.
type TurnStart struct {
	Turn string `json:"turn"`
}

func (*TurnStart) EventType() Type   { return TypeTurnStart }
func (t *TurnStart) Validate() error { return required("turn/start", "turn", t.Turn) }

// TurnEnd closes a Turn.
type TurnEnd struct {
	Turn   string `json:"turn"`
	Reason string `json:"reason,omitempty"`
}

func (*TurnEnd) EventType() Type   { return TypeTurnEnd }
func (t *TurnEnd) Validate() error { return required("turn/end", "turn", t.Turn) }

// StepEnd marks a step boundary, where steered messages are admitted.
type StepEnd struct {
	Turn string `json:"turn"`
	Step int    `json:"step"`
}

func (*StepEnd) EventType() Type   { return TypeStepEnd }
func (s *StepEnd) Validate() error { return required("step/end", "turn", s.Turn) }

func required(event, field, value string) error {
	if value == "" {
		return holdover.Newf(holdover.CodeBadRequest, "%s: %s is required", event, field)
	}
	return nil
}
