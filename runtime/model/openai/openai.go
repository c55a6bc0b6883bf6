// Package openai is a language model reached over the OpenAI Chat
// Completions API with tool calling. DeepSeek, OpenAI, vLLM and Ollama all
// serve that API, so one client covers them: only the base URL, the API key
// and the model name differ.
//
// It owns the translation between the runtime's conversation and the wire
// format, and nothing else: no retries hidden from the runtime, no state
// kept between requests.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/runtime/model"
)

// maxResponseBytes bounds a response body read into memory.
const maxResponseBytes = 8 << 20

// Config says which server and model to use.
type Config struct {
	// BaseURL is the API root, such as https://api.openai.com/v1,
	// https://api.deepseek.com/v1 or http://localhost:11434/v1 (Ollama).
	// The client posts to BaseURL + "/chat/completions".
	BaseURL string
	// APIKey is sent as a bearer token when set; local servers need none.
	APIKey string
	// Model is the model name the server knows, such as deepseek-chat.
	Model string
	// HTTPClient sends the requests; nil means a client with a two-minute
	// timeout.
	HTTPClient *http.Client
}

// FromEnv reads a Config from OPENAI_BASE_URL, OPENAI_API_KEY and
// OPENAI_MODEL, the names these servers' own tools use.
func FromEnv(getenv func(string) string) Config {
	return Config{BaseURL: getenv("OPENAI_BASE_URL"), APIKey: getenv("OPENAI_API_KEY"), Model: getenv("OPENAI_MODEL")}
}

// Model is a Chat Completions model. It is safe for concurrent use.
type Model struct {
	endpoint string
	cfg      Config
	http     *http.Client
}

// New checks cfg and returns the model.
func New(cfg Config) (*Model, error) {
	if cfg.BaseURL == "" {
		return nil, holdover.New(holdover.CodeBadRequest, "the model needs a base URL (OPENAI_BASE_URL), such as https://api.openai.com/v1")
	}
	if cfg.Model == "" {
		return nil, holdover.New(holdover.CodeBadRequest, "the model needs a model name (OPENAI_MODEL)")
	}
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: 2 * time.Minute}
	}
	return &Model{endpoint: strings.TrimRight(cfg.BaseURL, "/") + "/chat/completions", cfg: cfg, http: client}, nil
}

// Name is the configured model name.
func (m *Model) Name() string { return m.cfg.Model }

// Complete sends one chat completion request and reads the first choice.
// A refused request is BAD_REQUEST when the server blames the request
// (4xx other than 429) and INTERNAL otherwise; either way the message
// carries the server's own words.
func (m *Model) Complete(ctx context.Context, req model.Request) (model.Response, error) {
	body, err := json.Marshal(encodeRequest(m.cfg.Model, req))
	if err != nil {
		return model.Response{}, holdover.Wrap(err, holdover.CodeInternal, "encode the chat request")
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, m.endpoint, bytes.NewReader(body))
	if err != nil {
		return model.Response{}, holdover.Wrapf(err, holdover.CodeBadRequest, "chat request to %s", m.endpoint)
	}
	hreq.Header.Set("Content-Type", "application/json")
	if m.cfg.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+m.cfg.APIKey)
	}
	resp, err := m.http.Do(hreq)
	if err != nil {
		return model.Response{}, holdover.Wrapf(err, holdover.CodeInternal, "chat request to %s", m.endpoint)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return model.Response{}, holdover.Wrap(err, holdover.CodeInternal, "read the chat response")
	}
	if resp.StatusCode != http.StatusOK {
		return model.Response{}, statusError(resp.StatusCode, data)
	}
	return decodeResponse(data)
}

// The wire format of the Chat Completions API.
type (
	chatRequest struct {
		Model    string        `json:"model"`
		Messages []chatMessage `json:"messages"`
		Tools    []chatTool    `json:"tools,omitempty"`
	}
	chatMessage struct {
		Role       string         `json:"role"`
		Content    *string        `json:"content"`
		ToolCalls  []chatToolCall `json:"tool_calls,omitempty"`
		ToolCallID string         `json:"tool_call_id,omitempty"`
	}
	chatToolCall struct {
		ID       string       `json:"id"`
		Type     string       `json:"type"`
		Function chatFunction `json:"function"`
	}
	chatFunction struct {
		Name string `json:"name"`
		// Arguments is a JSON document inside a string, as the API has it.
		Arguments string `json:"arguments"`
	}
	chatTool struct {
		Type     string      `json:"type"`
		Function chatToolDef `json:"function"`
	}
	chatToolDef struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
	}
	chatResponse struct {
		Choices []struct {
			Message      chatMessage `json:"message"`
			FinishReason string      `json:"finish_reason"`
		} `json:"choices"`
	}
	chatError struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
		} `json:"error"`
	}
)

func encodeRequest(name string, req model.Request) chatRequest {
	out := chatRequest{Model: name}
	if req.System != "" {
		out.Messages = append(out.Messages, chatMessage{Role: "system", Content: &req.System})
	}
	for _, m := range req.Messages {
		text := m.Text
		switch m.Role {
		case model.Assistant:
			if text == "" && len(m.ToolCalls) == 0 {
				continue // an empty answer carries nothing, and some servers refuse it
			}
			cm := chatMessage{Role: "assistant"}
			if text != "" {
				cm.Content = &text
			}
			for _, c := range m.ToolCalls {
				cm.ToolCalls = append(cm.ToolCalls, chatToolCall{ID: c.ID, Type: "function", Function: chatFunction{Name: c.Name, Arguments: string(c.Arguments)}})
			}
			out.Messages = append(out.Messages, cm)
		case model.Tool:
			out.Messages = append(out.Messages, chatMessage{Role: "tool", Content: &text, ToolCallID: m.ToolCallID})
		default:
			out.Messages = append(out.Messages, chatMessage{Role: string(m.Role), Content: &text})
		}
	}
	for _, t := range req.Tools {
		params := t.InputSchema
		if len(params) == 0 {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		out.Tools = append(out.Tools, chatTool{Type: "function", Function: chatToolDef{Name: t.Name, Description: t.Description, Parameters: params}})
	}
	return out
}

func decodeResponse(data []byte) (model.Response, error) {
	var resp chatResponse
	if err := json.Unmarshal(data, &resp); err != nil {
		return model.Response{}, holdover.Wrap(err, holdover.CodeInternal, "the chat response is not valid JSON")
	}
	if len(resp.Choices) == 0 {
		return model.Response{}, holdover.New(holdover.CodeInternal, "the chat response has no choices")
	}
	msg := resp.Choices[0].Message
	out := model.Response{}
	if msg.Content != nil {
		out.Text = *msg.Content
	}
	for _, c := range msg.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, model.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: arguments(c.Function.Arguments)})
	}
	return out, nil
}

// arguments turns the API's argument string into JSON. Models sometimes
// send text that is not JSON; it is kept as a JSON string, so the call is
// still recorded as it was made and the tool reports the bad input.
func arguments(s string) json.RawMessage {
	if strings.TrimSpace(s) == "" {
		return json.RawMessage(`{}`)
	}
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	quoted, _ := json.Marshal(s) // a string always encodes
	return quoted
}

func statusError(status int, body []byte) error {
	var e chatError
	msg := strings.TrimSpace(string(body))
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		msg = e.Error.Message
	}
	if len(msg) > 500 {
		msg = msg[:500] + "…"
	}
	code := holdover.CodeInternal
	if status >= 400 && status < 500 && status != http.StatusTooManyRequests {
		code = holdover.CodeBadRequest
	}
	return holdover.Newf(code, "the model server answered %d %s: %s", status, http.StatusText(status), msg)
}
