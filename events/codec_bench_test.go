package events

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/holdover-dev/holdover"
)

// benchBodies are events of the sizes a coding agent records: a request
// header with five tool schemas (about 2 KB), a file read back as a tool
// result (about 1.4 KB, many escapes), and small calls and markers.
func benchBodies() []Body {
	schema := func(props string) json.RawMessage {
		return json.RawMessage(`{"type":"object","properties":{` + props + `},"required":["path"]}`)
	}
	ask := `"questions":{"type":"array","minItems":1,"description":"The questions to ask. Ids are stable within the call and name the answers.","items":{"type":"object","properties":{"id":{"type":"string","description":"Stable id of the question within this call."},"question":{"type":"string","description":"The question, ending with a question mark."},"options":{"type":"array","items":{"type":"object","properties":{"label":{"type":"string"},"description":{"type":"string"}},"required":["label"]}},"multiSelect":{"type":"boolean"}},"required":["id","question"]}},"timeout":{"type":"integer","description":"Seconds to wait for an answer batch before the call returns pending. -1 waits without a deadline."}`
	return []Body{
		&RequestHeader{Turn: "t1", Model: "scripted", Tools: []ToolSchema{
			{Name: "read_file", Description: "Reads a file.", InputSchema: schema(`"path":{"type":"string","description":"Path relative to the workspace."},"offset":{"type":"integer"},"limit":{"type":"integer"}`)},
			{Name: "write_file", Description: "Writes a file.", InputSchema: schema(`"path":{"type":"string"},"content":{"type":"string"}`)},
			{Name: "grep", Description: "Searches files.", InputSchema: schema(`"pattern":{"type":"string"},"glob":{"type":"string"}`)},
			{Name: "run_code", Description: "Runs code that may call tools.", InputSchema: schema(`"code":{"type":"string"},"timeout":{"type":"integer"}`)},
			{Name: holdover.ToolName, Description: "Asks the user structured questions.", InputSchema: schema(ask)},
		}},
		&ToolResult{Turn: "t1", CallID: "call-1-2-0", Name: "read_file", Content: Text(strings.Repeat("package main\n\nfunc main() {}\n", 40))},
		&ToolCall{Turn: "t1", CallID: "call-1-2-0", Name: "read_file", Arguments: json.RawMessage(`{"path":"main.go","pattern":"func"}`)},
		&AssistantMessage{Turn: "t1", ID: "a1-2", Content: Text("Looking at the code first.")},
		&StepEnd{Turn: "t1", Step: 2},
	}
}

var benchCodecs = []struct {
	name string
	c    codec
}{{"fast", fast}, {"encoding-json", reference}}

// BenchmarkDecode compares the codecs on one event of each kind.
func BenchmarkDecode(b *testing.B) {
	for _, body := range benchBodies() {
		data, err := Encode(New(at, body))
		if err != nil {
			b.Fatal(err)
		}
		for _, bc := range benchCodecs {
			b.Run(string(body.EventType())+"/"+bc.name, func(b *testing.B) {
				b.SetBytes(int64(len(data)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := bc.c.decode(data); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkEncode compares the codecs on one event of each kind.
func BenchmarkEncode(b *testing.B) {
	for _, body := range benchBodies() {
		e := New(at, body)
		for _, bc := range benchCodecs {
			b.Run(string(body.EventType())+"/"+bc.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := bc.c.encode(e); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
