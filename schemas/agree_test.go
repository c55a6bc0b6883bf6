package schemas_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/schemas"
)

// fullBodies has one body of every event type with every field set, so
// that each value can be spoiled in turn.
func fullBodies() []events.Body {
	content := []events.Part{{Type: "text", Text: "hello"}}
	reply := events.Message{ID: "m1", Role: "user", Content: content, Source: events.QuestionReply("call_1")}
	toolErr := &events.ToolError{Name: "AskAbortedError", Code: holdover.CodeAskAborted}
	return []events.Body{
		&events.RequestHeader{Turn: "t1", Model: "m", Tools: []events.ToolSchema{{
			Name: holdover.ToolName, Description: "ask", InputSchema: json.RawMessage(`{"type":"object","properties":{"timeout":{"type":"integer"}}}`),
		}}},
		&events.AssistantMessage{Turn: "t1", ID: "a1", Content: content},
		&events.ToolCall{Turn: "t1", CallID: "call_1", Name: holdover.ToolName, Arguments: json.RawMessage(`{"questions":[]}`)},
		&events.ToolResult{Turn: "t1", CallID: "call_1", Name: holdover.ToolName, Content: content, IsError: true, Error: toolErr},
		&events.PTCDispatch{Turn: "t1", ParentCallID: "code_1", CallID: "call_2", Name: holdover.ToolName, Arguments: json.RawMessage(`{"questions":[]}`),
			Content: content, IsError: true, Error: toolErr},
		&events.UserMessage{Turn: "t1", Message: reply},
		&events.InboxSpliced{Turn: "t1", Message: reply, InboxSeq: 7},
		&events.InboxClaimed{Turn: "t1", MessageID: "m1"},
		&events.InboxDiscarded{Turn: "t1", MessageID: "m1", Reason: "turn ended"},
		&events.TurnStart{Turn: "t1"},
		&events.TurnEnd{Turn: "t1", Reason: "done"},
		&events.StepEnd{Turn: "t1", Step: 3},
	}
}

func TestFullBodiesCoverEveryTypeAndField(t *testing.T) {
	var covered []string
	for _, b := range fullBodies() {
		covered = append(covered, string(b.EventType()))
		assertAllSet(t, reflect.ValueOf(b), string(b.EventType()))
	}
	sort.Strings(covered)
	var known []string
	for _, typ := range events.Types() {
		known = append(known, string(typ))
	}
	require.Equal(t, known, covered)
}

// assertAllSet fails for every field of v left at its zero value, so a
// field added to a body must be added to its full example too.
func assertAllSet(t *testing.T, v reflect.Value, where string) {
	t.Helper()
	for v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if _, _, ok := jsonField(f); !ok {
				continue
			}
			fv := v.Field(i)
			if fv.IsZero() {
				t.Errorf("%s.%s is not set in the full example", where, f.Name)
				continue
			}
			assertAllSet(t, fv, where+"."+f.Name)
		}
	case reflect.Slice:
		if v.Type() != reflect.TypeFor[json.RawMessage]() {
			for i := range v.Len() {
				assertAllSet(t, v.Index(i), where+"[]")
			}
		}
	}
}

// What Go writes fits the schema, and for every value of an event spoiled
// in turn (a string emptied, a number made negative or fractional) the
// schema and Go's decoder agree on whether the event is still valid: a
// requirement enforced on one side only fails here.
func TestSchemaAndDecoderAgreeOnEverySpoiledValue(t *testing.T) {
	at := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	for _, b := range fullBodies() {
		data, err := events.Encode(events.New(at, b))
		require.NoError(t, err)
		problems, err := schemas.Validate(schemas.EventSchema, data)
		require.NoError(t, err)
		require.Empty(t, problems, "what Go writes for %s fits its schema: %s", b.EventType(), data)

		var doc any
		require.NoError(t, json.Unmarshal(data, &doc))
		for _, spoiled := range spoil(doc, "") {
			mod, err := json.Marshal(spoiled.doc)
			require.NoError(t, err)
			_, decodeErr := events.Decode(mod)
			problems, err := schemas.Validate(schemas.EventSchema, mod)
			require.NoError(t, err)
			assert.Equal(t, decodeErr != nil, len(problems) > 0,
				"%s with %s: Go's decoder says %v, the schema says %v", b.EventType(), spoiled.what, decodeErr, problems)
		}
	}
}

type spoiled struct {
	what string
	doc  any
}

// spoil returns copies of doc, each with one leaf value replaced: every
// string emptied, every number made -1 and 1.5.
func spoil(doc any, at string) []spoiled {
	var out []spoiled
	switch v := doc.(type) {
	case map[string]any:
		for k, child := range v {
			for _, s := range spoil(child, at+"/"+k) {
				cp := make(map[string]any, len(v))
				for kk, vv := range v {
					cp[kk] = vv
				}
				cp[k] = s.doc
				out = append(out, spoiled{s.what, cp})
			}
		}
	case []any:
		for i, child := range v {
			for _, s := range spoil(child, fmt.Sprintf("%s/%d", at, i)) {
				cp := append([]any(nil), v...)
				cp[i] = s.doc
				out = append(out, spoiled{s.what, cp})
			}
		}
	case string:
		if v != "" {
			out = append(out, spoiled{at + ` = ""`, ""})
		}
	case float64:
		out = append(out, spoiled{at + " = -1", -1.0}, spoiled{at + " = 1.5", 1.5})
	}
	return out
}
