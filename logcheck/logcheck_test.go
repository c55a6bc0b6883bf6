package logcheck_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/logcheck"
	"github.com/holdover-dev/holdover/sessionlog"
)

func encoded(t *testing.T, b events.Body) []byte {
	t.Helper()
	data, err := events.Encode(events.New(time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC), b))
	require.NoError(t, err)
	return data
}

// A log Holdover's own writer recorded has no problems.
func TestAWellWrittenLogHasNoProblems(t *testing.T) {
	log := []sessionlog.Stored{
		{Seq: 3, HasPrev: true, Prev: 0, Data: encoded(t, &events.TurnStart{Turn: "t"})},
		{Seq: 9, HasPrev: true, Prev: 3, Data: []byte(`{"type":"agent/telemetry","at":"2026-12-03T10:00:00Z","data":{"cpu":1}}`)},
		{Seq: 10, HasPrev: true, Prev: 9, Data: encoded(t, &events.TurnEnd{Turn: "t"})},
	}
	r, err := logcheck.Check(log)
	require.NoError(t, err)
	assert.Empty(t, r.Problems)
	assert.Equal(t, 0, r.Bad())
	assert.Equal(t, 3, r.Events)
	assert.Equal(t, map[string]int{"agent/telemetry": 1}, r.Unread, "unknown types are passed over, and counted")
}

// Issue 8: every problem of a log is listed with its seq: schema
// violations, fencing headers, and what the question fold passes over.
func TestCheckListsEveryProblemWithItsSeq(t *testing.T) {
	log := []sessionlog.Stored{
		{Seq: 1, HasPrev: true, Prev: 0, Data: []byte(`{"type":"request/header","at":"2026-12-03T10:00:00Z","data":{"tools":[{"name":"ask_user_question","parameters":{"type":"object","properties":{"timeout":{"type":"integer"}}}}]}}`)},
		{Seq: 2, Data: []byte(`{"type":"tool/call","at":"2026-12-03T10:00:00Z","data":{"callID":"c1","name":"ask_user_question","arguments":{}}}`)},
		{Seq: 3, HasPrev: true, Prev: 1, Data: []byte(`{"type":"user/message","at":"yesterday","data":{"message":{"id":"m","role":"user","content":[]}}}`)},
		{Seq: 4, HasPrev: true, Prev: 3, Data: []byte(`not json`)},
	}
	r, err := logcheck.Check(log)
	require.NoError(t, err)
	var lines []string
	for _, p := range r.Problems {
		lines = append(lines, p.String())
	}
	all := strings.Join(lines, "\n")
	for _, want := range []string{
		`seq 1 request/header: the question fold passes over it (tool_schema_key): tool 1 declares ask_user_question with its input schema under "parameters"`,
		`seq 1 request/header: /data/tools/0: additional properties 'parameters' not allowed`,
		`seq 1 request/header: /data/tools/0: missing property 'inputSchema'`,
		`seq 2 tool/call: /data: missing property 'callId'`,
		`seq 2 tool/call: /data: additional properties 'callID' not allowed`,
		`seq 2 tool/call: no Holdover-Prev-Seq header`,
		`seq 3 user/message: Holdover-Prev-Seq is 1, but the Session's previous event is seq 2`,
		`seq 3 user/message: /at: 'yesterday' is not valid date-time`,
		`seq 3 user/message: /data/message: missing property 'source'`,
		`seq 4 (no type): the question fold passes over it (undecodable)`,
		`seq 4 (no type): not JSON`,
	} {
		assert.Contains(t, all, want)
	}
	// Go's decoder matches field names without regard to case, so the fold
	// reads callID as callId; the schema, which is the contract, does not.
	assert.NotContains(t, all, "seq 2 tool/call: the question fold passes over it")
	assert.Equal(t, 4, r.Bad())
}
