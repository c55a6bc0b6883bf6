package projection_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/projection"
)

// benchAskSchema is a timed ask_user_question schema of realistic size,
// descriptions included, as a model request records it.
const benchAskSchema = `{"type":"object","properties":{"questions":{"type":"array","minItems":1,"description":"The questions to ask. Ids are stable within the call and name the answers.","items":{"type":"object","properties":{"id":{"type":"string","description":"Stable id of the question within this call."},"question":{"type":"string","description":"The question, ending with a question mark."},"header":{"type":"string","description":"A short label shown above the question."},"options":{"type":"array","items":{"type":"object","properties":{"label":{"type":"string"},"description":{"type":"string"}},"required":["label"]}},"multiSelect":{"type":"boolean"},"detail":{"type":"string","description":"Markdown shown beside the question."}},"required":["id","question"]}},"timeout":{"type":"integer","description":"Seconds to wait for an answer batch before the call returns pending. A skipped question is an answer with empty selected; pending means no batch arrived and the user can still answer. -1 waits without a deadline."}},"required":["questions"]}`

func benchTools() []events.ToolSchema {
	return []events.ToolSchema{
		{Name: "read_file", Description: "Reads a file.", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"Path relative to the workspace."},"offset":{"type":"integer"},"limit":{"type":"integer"}},"required":["path"]}`)},
		{Name: "write_file", Description: "Writes a file.", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"]}`)},
		{Name: "grep", Description: "Searches files.", InputSchema: json.RawMessage(`{"type":"object","properties":{"pattern":{"type":"string"},"glob":{"type":"string"}},"required":["pattern"]}`)},
		{Name: "run_code", Description: "Runs code that may call tools.", InputSchema: json.RawMessage(`{"type":"object","properties":{"code":{"type":"string"},"timeout":{"type":"integer"}},"required":["code"]}`)},
		{Name: holdover.ToolName, Description: "Asks the user structured questions.", InputSchema: json.RawMessage(benchAskSchema)},
	}
}

// benchSession is a Session of turns: each has a few steps, and each step a
// request header, assistant text, tool calls for several tools with their
// results, and a step end. Every third turn asks a timed question that
// goes pending and is answered late through the inbox; others answer in
// time; now and then the user writes.
func benchSession(turns int) []events.Event {
	s := new(session)
	file := strings.Repeat("package main\n\nfunc main() {}\n", 40)
	for turn := range turns {
		tid := fmt.Sprintf("t%d", turn)
		s.add(&events.TurnStart{Turn: tid})
		if turn%4 == 0 {
			s.add(&events.UserMessage{Turn: tid, Message: events.Message{ID: "u" + tid, Role: "user", Content: events.Text("Please carry on with the migration."), Source: events.Source{Kind: events.SourceUser}}})
		}
		for step := range 3 {
			s.add(&events.RequestHeader{Turn: tid, Model: "scripted", Tools: benchTools()},
				&events.AssistantMessage{Turn: tid, ID: fmt.Sprintf("a%d-%d", turn, step), Content: events.Text("Looking at the code first.")})
			for i, tool := range []string{"read_file", "grep", "run_code"} {
				id := fmt.Sprintf("call-%d-%d-%d", turn, step, i)
				s.add(&events.ToolCall{Turn: tid, CallID: id, Name: tool, Arguments: json.RawMessage(`{"path":"main.go","pattern":"func"}`)},
					&events.ToolResult{Turn: tid, CallID: id, Name: tool, Content: events.Text(file)})
			}
			s.add(&events.StepEnd{Turn: tid, Step: step})
		}
		q := "q" + tid
		s.add(&events.RequestHeader{Turn: tid, Model: "scripted", Tools: benchTools()}, ask(q))
		if turn%3 == 0 {
			s.add(pending(q), &events.TurnEnd{Turn: tid})
			s.add(spliced("r"+tid, q, bothAnswered), &events.InboxClaimed{MessageID: "r" + tid}, admitted("r"+tid, q, bothAnswered))
		} else {
			s.add(answered(q, bothAnswered...), &events.TurnEnd{Turn: tid})
		}
	}
	return s.log
}

func reportEventsPerSecond(b *testing.B, perOp int) {
	b.ReportMetric(float64(b.N*perOp)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkFold folds decoded events (target: at least 1M events/s).
func BenchmarkFold(b *testing.B) {
	log := benchSession(50)
	b.ReportAllocs()
	for b.Loop() {
		projection.Fold(log)
	}
	reportEventsPerSecond(b, len(log))
}

// BenchmarkDecodeFold decodes each recorded event and folds it, as the
// worker does with the Session stream (target: at least 200k events/s).
func BenchmarkDecodeFold(b *testing.B) {
	log := benchSession(50)
	encoded := make([][]byte, len(log))
	var size int
	for i, e := range log {
		data, err := events.Encode(e)
		if err != nil {
			b.Fatal(err)
		}
		encoded[i] = data
		size += len(data)
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		v := projection.New()
		for i, data := range encoded {
			e, err := events.Decode(data)
			if err != nil {
				b.Fatal(err)
			}
			e.Seq = uint64(i + 1)
			v.Apply(e)
		}
	}
	reportEventsPerSecond(b, len(log))
}
