package events

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
)

var at = time.Date(2026, 3, 4, 5, 6, 7, 890, time.UTC)

// samples holds one filled-in body of every known event type.
func samples() []Body {
	reply, err := NewReply("m1", "call-1", []holdover.Question{{ID: "q", Question: "Why?"}}, []holdover.Answer{{ID: "q", Selected: []string{}, Custom: "because"}})
	if err != nil {
		panic(err)
	}
	return []Body{
		&RequestHeader{Turn: "t1", Model: "scripted", Tools: []ToolSchema{
			{Name: "run_code", Description: "Runs code.", InputSchema: json.RawMessage(`{"type":"object","properties":{"code":{"type":"string"}}}`)},
			{Name: holdover.ToolName, InputSchema: json.RawMessage(`{"type":"object","properties":{"timeout":{"type":"integer"}}}`)},
		}},
		&AssistantMessage{Turn: "t1", ID: "a1", Content: Text("Let me ask.")},
		&ToolCall{Turn: "t1", CallID: "call-1", Name: holdover.ToolName, Arguments: json.RawMessage(`{"questions":[{"id":"q","question":"Why?"}],"timeout":30}`)},
		&ToolResult{Turn: "t1", CallID: "call-1", Name: holdover.ToolName, Content: []Part{{Type: "text", Text: "a"}, {Type: "text", Text: "b"}}, IsError: true, Error: &ToolError{Name: "AskAborted", Code: holdover.CodeAskAborted}},
		&PTCDispatch{Turn: "t1", ParentCallID: "run-1", CallID: "sub-1", Name: holdover.ToolName, Arguments: json.RawMessage(`{"questions":[]}`), Content: Text(`{"pending":true}`)},
		&UserMessage{Turn: "t1", Message: reply},
		&InboxSpliced{Turn: "t1", Message: Message{ID: "m2", Role: "user", Content: Text("hello"), Source: Source{Kind: SourceUser}}, InboxSeq: 42},
		&InboxClaimed{Turn: "t1", MessageID: "m1"},
		&InboxDiscarded{Turn: "t1", MessageID: "m1", Reason: "cancelled"},
		&TurnStart{Turn: "t1"},
		&TurnEnd{Turn: "t1", Reason: "done"},
		&StepEnd{Turn: "t1", Step: 3},
	}
}

func TestSamplesCoverEveryKnownType(t *testing.T) {
	covered := map[Type]bool{}
	for _, b := range samples() {
		covered[b.EventType()] = true
	}
	for typ := range bodies {
		assert.True(t, covered[typ], "no sample body for %s", typ)
	}
	assert.Len(t, covered, len(bodies))
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	for _, body := range samples() {
		t.Run(string(body.EventType()), func(t *testing.T) {
			in := New(at.In(time.FixedZone("UTC+2", 2*3600)), body)
			data, err := Encode(in)
			require.NoError(t, err)

			out, err := Decode(data)
			require.NoError(t, err)
			assert.True(t, out.Known())
			assert.Equal(t, body.EventType(), out.Type)
			assert.True(t, at.Equal(out.At), "At %v, want %v", out.At, at)
			assert.Equal(t, time.UTC, out.At.Location(), "events are stamped in UTC")
			assert.Equal(t, body, out.Body)
			assert.Zero(t, out.Seq, "Seq is not part of the encoded form")

			again, err := Encode(out)
			require.NoError(t, err)
			assert.Equal(t, string(data), string(again), "re-encoding is stable")
		})
	}
}

func TestEncodedFormIsReadable(t *testing.T) {
	data, err := Encode(New(at, &InboxClaimed{MessageID: "m1"}))
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"agent/inbox/claimed","at":"2026-03-04T05:06:07.00000089Z","data":{"messageId":"m1"}}`, string(data))
}

// wantBadRequest asserts err is a BAD_REQUEST whose message names every fragment.
func wantBadRequest(t *testing.T, err error, fragments ...string) {
	t.Helper()
	require.Error(t, err)
	assert.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err), "code of %q", err)
	for _, f := range fragments {
		assert.Contains(t, err.Error(), f)
	}
}

func TestDecodeRejectsBadInput(t *testing.T) {
	cases := []struct {
		name      string
		input     string
		fragments []string
	}{
		{"empty", ``, []string{"not valid JSON"}},
		{"not JSON", `tool/call c1`, []string{"not valid JSON"}},
		{"truncated", `{"type":"tool/call","data":{"callId":"c1"`, []string{"not valid JSON"}},
		{"not an object", `["tool/call"]`, []string{"not valid JSON"}},
		{"bad time", `{"type":"turn/end","at":"yesterday","data":{"turn":"t"}}`, []string{"not valid JSON"}},
		{"time that cannot be written back", `{"type":"turn/end","at":"0000-01-01T00:00:00+01:00","data":{"turn":"t"}}`, []string{"outside the years 0 to 9999"}},
		{"missing type", `{"at":"2026-01-01T00:00:00Z","data":{"turn":"t"}}`, []string{"no type"}},
		{"empty type", `{"type":"","data":{}}`, []string{"no type"}},
		{"known type without data", `{"type":"turn/start"}`, []string{"turn/start", "no data"}},
		{"data of the wrong shape", `{"type":"tool/call","data":["c1"]}`, []string{"tool/call"}},
		{"field of the wrong type", `{"type":"step/end","data":{"turn":"t","step":"one"}}`, []string{"step/end"}},
		{"tool/call without callId", `{"type":"tool/call","data":{"name":"x"}}`, []string{"tool/call", "callId is required"}},
		{"tool/call without name", `{"type":"tool/call","data":{"callId":"c1"}}`, []string{"tool/call", "name is required"}},
		{"tool/result without callId", `{"type":"tool/result","data":{"content":[]}}`, []string{"tool/result", "callId is required"}},
		{"ptc-dispatch without parent", `{"type":"tool/ptc-dispatch","data":{"callId":"c1","name":"x"}}`, []string{"tool/ptc-dispatch", "parentCallId is required"}},
		{"header tool without name", `{"type":"request/header","data":{"tools":[{"inputSchema":{}}]}}`, []string{"request/header", "tool 1 has no name"}},
		{"assistant message without id", `{"type":"assistant/message","data":{"content":[]}}`, []string{"assistant/message", "id is required"}},
		{"user message without id", `{"type":"user/message","data":{"message":{"role":"user","source":{"kind":"user"}}}}`, []string{"message", "id is required"}},
		{"user message without role", `{"type":"user/message","data":{"message":{"id":"m","source":{"kind":"user"}}}}`, []string{"message", "role is required"}},
		{"user message without source", `{"type":"user/message","data":{"message":{"id":"m","role":"user"}}}`, []string{"message has no source"}},
		{"unknown source kind", `{"type":"user/message","data":{"message":{"id":"m","role":"user","source":{"kind":"robot"}}}}`, []string{`unknown message source kind "robot"`}},
		{"reply source without callId", `{"type":"agent/inbox/spliced","data":{"message":{"id":"m","role":"user","source":{"kind":"user-question-reply","outcome":"answered"}}}}`, []string{"needs a callId"}},
		{"reply source with another outcome", `{"type":"user/message","data":{"message":{"id":"m","role":"user","source":{"kind":"user-question-reply","callId":"c","outcome":"dismissed"}}}}`, []string{`outcome "dismissed"`}},
		{"claimed without message id", `{"type":"agent/inbox/claimed","data":{}}`, []string{"agent/inbox/claimed", "messageId is required"}},
		{"discarded without message id", `{"type":"agent/inbox/discarded","data":{"reason":"x"}}`, []string{"agent/inbox/discarded", "messageId is required"}},
		{"turn/start without turn", `{"type":"turn/start","data":{}}`, []string{"turn/start", "turn is required"}},
		{"turn/end without turn", `{"type":"turn/end","data":{}}`, []string{"turn/end", "turn is required"}},
		{"step/end without turn", `{"type":"step/end","data":{"step":1}}`, []string{"step/end", "turn is required"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, err := Decode([]byte(tc.input))
			wantBadRequest(t, err, tc.fragments...)
			assert.Nil(t, e.Body, "a rejected event has no body")
			if _, known := NewBody(e.Type); known {
				// An invalid body comes back with its envelope, so the
				// reader can say which event failed.
				var in struct {
					Type Type            `json:"type"`
					Data json.RawMessage `json:"data"`
				}
				require.NoError(t, json.Unmarshal([]byte(tc.input), &in))
				assert.Equal(t, in.Type, e.Type)
				assert.Equal(t, string(in.Data), string(e.Data))
			} else {
				assert.Zero(t, e, "an event that is no event decodes to nothing")
			}
		})
	}
}

func TestOversizedEvents(t *testing.T) {
	big := strings.Repeat("x", MaxEventBytes)
	_, err := Encode(New(at, &AssistantMessage{ID: "a1", Content: Text(big)}))
	wantBadRequest(t, err, "assistant/message", "over the", "byte limit")

	raw := []byte(`{"type":"assistant/message","data":{"id":"a1","content":[{"type":"text","text":"` + big + `"}]}}`)
	_, err = Decode(raw)
	wantBadRequest(t, err, "over the", "byte limit")

	// Just under the limit still fits.
	filler := MaxEventBytes - len(`{"type":"assistant/message","at":"2026-03-04T05:06:07.00000089Z","data":{"id":"a1","content":[{"type":"text","text":""}]}}`)
	data, err := Encode(New(at, &AssistantMessage{ID: "a1", Content: Text(strings.Repeat("x", filler))}))
	require.NoError(t, err)
	assert.Len(t, data, MaxEventBytes)
	_, err = Decode(data)
	require.NoError(t, err)
}

func TestEncodeRejectsBadEvents(t *testing.T) {
	_, err := Encode(Event{Type: "tool/progress", At: at, Data: json.RawMessage(`{}`)})
	wantBadRequest(t, err, "tool/progress", "no body")

	_, err = Encode(Event{Type: TypeToolResult, At: at, Body: &ToolCall{CallID: "c", Name: "n"}})
	wantBadRequest(t, err, "does not match")

	_, err = Encode(New(at, &ToolCall{Name: "n"}))
	wantBadRequest(t, err, "callId is required")

	_, err = Encode(New(at, &UserMessage{Message: Message{ID: "m", Role: "user", Source: Source{Kind: "robot"}}}))
	wantBadRequest(t, err, "unknown message source kind")

	_, err = Encode(New(at, &ToolCall{CallID: "c", Name: "n", Arguments: json.RawMessage(`{"broken"`)}))
	wantBadRequest(t, err, "encode tool/call")
}

// An event of a type this version does not know is kept as recorded, so a
// newer writer's events pass through an older reader unharmed.
func TestUnknownTypeIsKept(t *testing.T) {
	raw := `{"type":"tool/progress","at":"2026-03-04T05:06:07Z","data":{"callId":"c1","percent":40}}`
	e, err := Decode([]byte(raw))
	require.NoError(t, err)
	assert.False(t, e.Known())
	assert.Nil(t, e.Body)
	assert.Equal(t, Type("tool/progress"), e.Type)
	assert.True(t, e.At.Equal(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)))
	assert.JSONEq(t, `{"callId":"c1","percent":40}`, string(e.Data))

	e, err = Decode([]byte(`{"type":"future/thing"}`))
	require.NoError(t, err)
	assert.False(t, e.Known())
	assert.Empty(t, e.Data)
}

// FuzzDecode feeds arbitrary bytes to Decode: it never panics, every
// failure is a BAD_REQUEST, and whatever decodes as a known event encodes
// again and decodes to the same event.
func FuzzDecode(f *testing.F) {
	for _, body := range samples() {
		data, err := Encode(New(at, body))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		``, `null`, `{}`, `{"type":"tool/progress","data":{"x":1}}`, `{"type":"request/header","data":null}`,
		`{"type":"turn/end","at":"0000-01-01T00:00:00+01:00","data":{"turn":"t"}}`,
		`{"TYPE":"turn/start","Data":{"Turn":"t"}}`,
		`{"type":"user/message","data":{"message":{"id":"m","role":"user","content":[{"type":"text","text":"\ud800"}],"source":{"kind":"user"}}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := Decode(data)
		if err != nil {
			if code := holdover.CodeOf(err); code != holdover.CodeBadRequest {
				t.Fatalf("Decode failed with code %q, want BAD_REQUEST: %v", code, err)
			}
			return
		}
		if e.Type == "" {
			t.Fatal("decoded an event without a type")
		}
		if !e.Known() {
			return
		}
		again, err := Encode(e)
		if err != nil {
			t.Fatalf("decoded event does not encode: %v\ninput %q", err, data)
		}
		back, err := Decode(again)
		if err != nil {
			t.Fatalf("re-encoded event does not decode: %v\n%s", err, again)
		}
		// Recorded JSON (arguments, schemas) comes back compacted, so the
		// same event is the same encoding.
		third, err := Encode(back)
		if err != nil {
			t.Fatalf("round-tripped event does not encode: %v", err)
		}
		if back.Type != e.Type || !back.At.Equal(e.At) || !bytes.Equal(third, again) {
			t.Fatalf("round trip changed the event:\n got %s\nwant %s", third, again)
		}
	})
}
