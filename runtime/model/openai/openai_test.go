package openai_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/runtime/model"
	"github.com/holdover-dev/holdover/runtime/model/openai"
)

// server is a local Chat Completions endpoint: it keeps every request body
// and answers each with the next queued status and body.
type server struct {
	t       *testing.T
	mu      sync.Mutex
	bodies  []map[string]any
	auth    []string
	replies []reply
}

type reply struct {
	status int
	body   string
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.Error(w, `{"error":{"message":"no such route"}}`, http.StatusNotFound)
		return
	}
	data, _ := io.ReadAll(r.Body)
	var body map[string]any
	if err := json.Unmarshal(data, &body); err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bodies = append(s.bodies, body)
	s.auth = append(s.auth, r.Header.Get("Authorization"))
	next := s.replies[0]
	s.replies = s.replies[1:]
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(next.status)
	_, _ = io.WriteString(w, next.body)
}

func start(t *testing.T, replies ...reply) (*server, *openai.Model) {
	s := &server{t: t, replies: replies}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	m, err := openai.New(openai.Config{BaseURL: hs.URL + "/v1/", APIKey: "sk-test", Model: "deepseek-chat"})
	require.NoError(t, err)
	return s, m
}

var askSchema = events.ToolSchema{
	Name:        holdover.ToolName,
	Description: "Ask the user.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"questions":{"type":"array"},"timeout":{"type":"integer"}},"required":["questions"]}`),
}

func TestToolCallResponseAndRequestShape(t *testing.T) {
	s, m := start(t, reply{200, `{"id":"x","object":"chat.completion","choices":[{"index":0,"finish_reason":"tool_calls",
		"message":{"role":"assistant","content":null,"tool_calls":[
			{"id":"call_9","type":"function","function":{"name":"ask_user_question","arguments":"{\"questions\":[{\"id\":\"q1\",\"question\":\"Which DB?\"}],\"timeout\":5}"}},
			{"id":"call_10","type":"function","function":{"name":"sleep","arguments":"not json"}}]}}]}`})

	resp, err := m.Complete(context.Background(), model.Request{
		System: "You are careful.",
		Tools:  []events.ToolSchema{askSchema, {Name: "sleep"}},
		Messages: []model.Message{
			{Role: model.User, Text: "set up the service"},
			{Role: model.Assistant, Text: "Asking.", ToolCalls: []model.ToolCall{{ID: "call_1", Name: "sleep", Arguments: json.RawMessage(`{"ms":5}`)}}},
			{Role: model.Tool, ToolCallID: "call_1", ToolName: "sleep", Text: "slept 5 ms"},
			{Role: model.Assistant}, // an empty answer is not sent
			{Role: model.User, Text: `{"kind":"answer_to_pending_question"}`},
		},
	})
	require.NoError(t, err)
	require.Equal(t, model.Response{ToolCalls: []model.ToolCall{
		{ID: "call_9", Name: holdover.ToolName, Arguments: json.RawMessage(`{"questions":[{"id":"q1","question":"Which DB?"}],"timeout":5}`)},
		{ID: "call_10", Name: "sleep", Arguments: json.RawMessage(`"not json"`)},
	}}, resp, "arguments that are not JSON are kept as a JSON string, for the tool to refuse")

	require.Equal(t, []string{"Bearer sk-test"}, s.auth)
	want := `{
		"model": "deepseek-chat",
		"messages": [
			{"role": "system", "content": "You are careful."},
			{"role": "user", "content": "set up the service"},
			{"role": "assistant", "content": "Asking.", "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "sleep", "arguments": "{\"ms\":5}"}}]},
			{"role": "tool", "tool_call_id": "call_1", "content": "slept 5 ms"},
			{"role": "user", "content": "{\"kind\":\"answer_to_pending_question\"}"}
		],
		"tools": [
			{"type": "function", "function": {"name": "ask_user_question", "description": "Ask the user.",
				"parameters": {"type":"object","properties":{"questions":{"type":"array"},"timeout":{"type":"integer"}},"required":["questions"]}}},
			{"type": "function", "function": {"name": "sleep", "parameters": {"type": "object", "properties": {}}}}
		]
	}`
	got, err := json.Marshal(s.bodies[0])
	require.NoError(t, err)
	require.JSONEq(t, want, string(got))
}

func TestTextResponse(t *testing.T) {
	s, m := start(t, reply{200, `{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"All done."}}]}`})
	resp, err := m.Complete(context.Background(), model.Request{Messages: []model.Message{{Role: model.User, Text: "hi"}}})
	require.NoError(t, err)
	require.Equal(t, model.Response{Text: "All done."}, resp)
	require.NotContains(t, s.bodies[0], "tools", "a request without tools sends no tools field")
	require.Equal(t, "deepseek-chat", m.Name())
}

func TestErrorResponsesKeepTheServersMessage(t *testing.T) {
	for _, tc := range []struct {
		reply reply
		code  holdover.Code
		text  string
	}{
		{reply{401, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}`}, holdover.CodeBadRequest, "401 Unauthorized: Incorrect API key provided"},
		{reply{429, `{"error":{"message":"Rate limit reached"}}`}, holdover.CodeInternal, "Rate limit reached"},
		{reply{502, `upstream down`}, holdover.CodeInternal, "502 Bad Gateway: upstream down"},
		{reply{200, `{"choices":[]}`}, holdover.CodeInternal, "no choices"},
		{reply{200, `{"choices":`}, holdover.CodeInternal, "not valid JSON"},
	} {
		_, m := start(t, tc.reply)
		_, err := m.Complete(context.Background(), model.Request{Messages: []model.Message{{Role: model.User, Text: "hi"}}})
		require.Equal(t, tc.code, holdover.CodeOf(err), tc.text)
		require.Contains(t, err.Error(), tc.text)
	}
}

func TestConfig(t *testing.T) {
	_, err := openai.New(openai.Config{Model: "m"})
	require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err))
	_, err = openai.New(openai.Config{BaseURL: "http://localhost:11434/v1"})
	require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err))
	env := map[string]string{"OPENAI_BASE_URL": "http://localhost:11434/v1", "OPENAI_MODEL": "qwen3"}
	cfg := openai.FromEnv(func(k string) string { return env[k] })
	require.Equal(t, openai.Config{BaseURL: "http://localhost:11434/v1", Model: "qwen3"}, cfg)

	s, m := start(t, reply{200, `{"choices":[{"message":{"content":"x"}}]}`})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = m.Complete(ctx, model.Request{})
	require.Error(t, err, "a cancelled request is not sent")
	require.Empty(t, s.bodies)
}
