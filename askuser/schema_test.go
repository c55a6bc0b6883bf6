package askuser_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/askuser"
)

// schemaNode is the part of a JSON Schema the tests read.
type schemaNode struct {
	Type        string                 `json:"type"`
	Description string                 `json:"description"`
	Properties  map[string]*schemaNode `json:"properties"`
	Required    []string               `json:"required"`
	Items       *schemaNode            `json:"items"`
	Minimum     *int64                 `json:"minimum"`
	Maximum     *int64                 `json:"maximum"`
}

func inputSchema(t *testing.T, tool *askuser.Tool) *schemaNode {
	t.Helper()
	var s schemaNode
	require.NoError(t, json.Unmarshal(tool.Schema().InputSchema, &s))
	return &s
}

func TestM1LegacyIsTheDefaultAndHasNoTimeout(t *testing.T) {
	for _, mode := range []string{"", askuser.ModeLegacy} {
		tool, _ := newTool(t, askuser.Config{Mode: mode})
		schema := tool.Schema()
		require.Equal(t, holdover.ToolName, schema.Name)
		in := inputSchema(t, tool)
		require.Equal(t, "object", in.Type)
		require.Equal(t, []string{"questions"}, in.Required)
		require.NotContains(t, in.Properties, "timeout", "mode %q", mode)
		require.Contains(t, in.Properties, "intent", "plan review keeps the blocking schema (M8)")
		require.NotContains(t, schema.Description, "pending", "a legacy call never returns pending")
	}
}

func TestM2M5D2TimedSchemaAddsTimeoutNamingTheDefault(t *testing.T) {
	tool, _ := newTool(t, timed)
	schema := tool.Schema()
	in := inputSchema(t, tool)

	// The projection detects timed calls by properties.timeout (D2).
	timeout := in.Properties["timeout"]
	require.NotNil(t, timeout)
	require.Equal(t, "integer", timeout.Type)
	require.Equal(t, int64(-1), *timeout.Minimum)
	require.Equal(t, int64(2147483), *timeout.Maximum)
	require.NotContains(t, in.Required, "timeout")
	for _, want := range []string{"Seconds", "default 120", "Omit it unless the user gave you a duration", "Use -1 only when an answer is required before you can proceed"} {
		require.Contains(t, timeout.Description, want)
	}

	for _, want := range []string{
		"stable id",
		`A skipped question is an item with an empty "selected" and no "custom".`,
		"no answer batch arrived before the timeout",
		"the user can still answer",
		`{"answers":[{"id","selected":[...],"custom"?}]}`,
		`{"pending":true,"callId":...,"message":...}`,
		"exactly one of two JSON objects",
	} {
		require.Contains(t, schema.Description, want)
	}
}

func TestM2ConfiguredDefaultIsNamedInTheDescription(t *testing.T) {
	tool, _ := newTool(t, askuser.Config{Mode: askuser.ModeTimed, DefaultTimeout: 45})
	desc := inputSchema(t, tool).Properties["timeout"].Description
	require.Contains(t, desc, "default 45")
	require.NotContains(t, desc, "default 120")

	blocking, _ := newTool(t, askuser.Config{Mode: askuser.ModeTimed, DefaultTimeout: -1})
	require.Contains(t, inputSchema(t, blocking).Properties["timeout"].Description, "default -1, which waits until the user answers")
}

// The question schema must list exactly the fields the tool parses: a
// property the model is offered but the parser refuses (or the reverse)
// would turn good calls into errors.
func TestQuestionSchemaMatchesTheQuestionType(t *testing.T) {
	jsonNames := func(v any) []string {
		var names []string
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			names = append(names, strings.Split(rt.Field(i).Tag.Get("json"), ",")[0])
		}
		return names
	}
	keys := func(m map[string]*schemaNode) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		return out
	}
	for _, mode := range []string{askuser.ModeLegacy, askuser.ModeTimed} {
		tool, _ := newTool(t, askuser.Config{Mode: mode})
		in := inputSchema(t, tool)
		question := in.Properties["questions"].Items
		require.ElementsMatch(t, jsonNames(holdover.Question{}), keys(question.Properties))
		require.ElementsMatch(t, []string{"id", "question"}, question.Required)
		require.ElementsMatch(t, jsonNames(holdover.Option{}), keys(question.Properties["options"].Items.Properties))
		require.ElementsMatch(t, jsonNames(holdover.Intent{}), keys(in.Properties["intent"].Properties))
	}
}

func TestSchemaIsStableAndNotSharedWithCallers(t *testing.T) {
	tool, _ := newTool(t, timed)
	first := tool.Schema()
	first.InputSchema[0] = 'X'
	second := tool.Schema()
	require.True(t, json.Valid(second.InputSchema))
	require.Equal(t, tool.Schema(), second)
}
