package logcheck_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/inbox"
	"github.com/holdover-dev/holdover/logcheck"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/schemas"
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
	// Names are exact: the fold reads no call id from callID (issue 20).
	assert.Contains(t, all, `seq 2 tool/call: the question fold passes over it (invalid_body): event tool/call: request has an unknown field "callID"`)
	assert.Equal(t, 4, r.Bad())
}

// Issue 20: check reads everything the fold reads. A timeout recorded in
// milliseconds leaves the call untracked, and a result text that is
// neither pending nor an answer batch removes it; each gets its line.
func TestCheckNamesAsksAndResultsTheFoldCannotTrack(t *testing.T) {
	header := `{"type":"request/header","at":"2026-12-03T10:00:00Z","data":{"tools":[{"name":"ask_user_question","inputSchema":{"type":"object","properties":{"timeout":{"type":"integer"}}}}]}}`
	log := []sessionlog.Stored{
		{Seq: 1, HasPrev: true, Data: []byte(header)},
		{Seq: 2, HasPrev: true, Prev: 1, Data: []byte(`{"type":"tool/call","at":"2026-12-03T10:00:01Z","data":{"callId":"c1","name":"ask_user_question","arguments":{"questions":[{"id":"q","question":"Ready?"}],"timeout":1.5}}}`)},
		{Seq: 3, HasPrev: true, Prev: 2, Data: []byte(`{"type":"tool/call","at":"2026-12-03T10:00:02Z","data":{"callId":"c2","name":"ask_user_question","arguments":{"questions":[{"id":"q","question":"Ready?"},{"id":"q","question":"Sure?"}]}}}`)},
		{Seq: 4, HasPrev: true, Prev: 3, Data: []byte(`{"type":"tool/result","at":"2026-12-03T10:00:03Z","data":{"callId":"c3","name":"ask_user_question","content":[{"type":"text","text":"{\"pending\":true}"}]}}`)},
		{Seq: 5, HasPrev: true, Prev: 4, Data: []byte(`{"type":"tool/result","at":"2026-12-03T10:00:04Z","data":{"callId":"c4","name":"ask_user_question","content":[{"type":"text","text":"{\"answers\":[{\"id\":\"q\"}]}"}]}}`)},
		{Seq: 6, HasPrev: true, Prev: 5, Data: []byte(`{"type":"tool/result","at":"2026-12-03T10:00:05Z","data":{"callId":"c5","name":"ask_user_question","content":[{"type":"text","text":"{\"pending\":true,\"callId\":\"c5\",\"message\":\"later\"}"}]}}`)},
	}
	r, err := logcheck.Check(log)
	require.NoError(t, err)
	var lines []string
	for _, p := range r.Problems {
		lines = append(lines, p.String())
	}
	all := strings.Join(lines, "\n")
	t.Log(all)
	for _, want := range []string{
		"seq 2 tool/call: the question fold passes over it (invalid_arguments): timeout is in seconds, -1 (until answered) or 1–2147483; got 1.5",
		`seq 3 tool/call: the question fold passes over it (invalid_arguments): question id "q" is used twice in one call`,
		"seq 4 tool/result: the result text does not fit tool/pending.json (pending, which continues the call): missing properties 'callId', 'message'",
		"seq 5 tool/result: the result text does not fit tool/answers.json (an answer batch, which settles the call): /answers/0: missing property 'selected'",
	} {
		assert.Contains(t, all, want)
	}
	assert.NotContains(t, all, "seq 6", "a pending result as the service writes it is fine")
	assert.Equal(t, 4, r.Bad())
}

// An inbox message the agent's reader would pass over is named with its
// stream seq; so is a stored View that is not the fold of its log.
func TestCheckInboxAndProjection(t *testing.T) {
	good := `{"id":"m1","role":"user","content":[{"type":"text","text":"hi"}],"source":{"kind":"user"}}`
	problems, err := logcheck.CheckInbox([]inbox.Stored{
		{Seq: 7, Data: []byte(good)},
		{Seq: 8, Data: []byte(`{"id":"m2","role":"user","content":[{"type":"text","text":"hi"}]}`)},
		{Seq: 9, Data: []byte(`{"id":"m3","role":"user","content":[],"source":{"kind":"user"},"Source":{}}`)},
	})
	require.NoError(t, err)
	var lines []string
	for _, p := range problems {
		lines = append(lines, p.String())
	}
	all := strings.Join(lines, "\n")
	t.Log(all)
	assert.NotContains(t, all, "seq 7")
	assert.Contains(t, all, "seq 8 inbox message: missing property 'source'")
	assert.Contains(t, all, "seq 9 inbox message: additional properties 'Source' not allowed")

	stored, folded := projection.New(), projection.New()
	folded.LastSeq = 4
	lag := logcheck.CheckProjection(stored, folded, false)
	require.Len(t, lag, 1)
	assert.Contains(t, lag[0].String(), "a projection worker has events left to fold")
	stored.LastSeq = 4
	folded.Active = []projection.Call{{CallID: "c1", Status: projection.Open, Seq: 2}}
	wrong := logcheck.CheckProjection(stored, folded, false)
	require.Len(t, wrong, 1)
	assert.Contains(t, wrong[0].String(), "seq 4 userQuestions View: the stored View (lastSeq 4: 0 active, 0 settled) is not the fold of the log (lastSeq 4: 1 active, 0 settled); run `holdover rebuild`")
	assert.Empty(t, logcheck.CheckProjection(folded, folded, true))
}

// One truth for the shapes (issue 20): for every fixture of what the fold
// reads to track a call, the schema (what `holdover check` and the service
// validate against) and the fold (events.Decode, projection.Reject) agree
// on whether it is usable.
func TestSchemaCheckAndFoldAgreeOnEveryFixture(t *testing.T) {
	ask := `{"questions":[{"id":"q","question":"Ready?"}],"timeout":30}`
	call := func(data string) string {
		return `{"type":"tool/call","at":"2026-12-03T10:00:00Z","data":` + data + `}`
	}
	result := func(text string) string {
		b, err := json.Marshal(text)
		require.NoError(t, err)
		return `{"type":"tool/result","at":"2026-12-03T10:00:00Z","data":{"callId":"c1","name":"ask_user_question","content":[{"type":"text","text":` + string(b) + `}]}}`
	}
	fixtures := []struct {
		name string
		data string
		ok   bool
	}{
		{"valid call", call(`{"callId":"c1","name":"ask_user_question","arguments":` + ask + `}`), true},
		{"null timeout", call(`{"callId":"c1","name":"ask_user_question","arguments":{"questions":[{"id":"q","question":"Ready?"}],"timeout":null}}`), true},
		{"blocking timeout", call(`{"callId":"c1","name":"ask_user_question","arguments":{"questions":[{"id":"q","question":"Ready?"}],"timeout":-1}}`), true},
		{"misspelt callID", call(`{"callID":"c1","name":"ask_user_question","arguments":` + ask + `}`), false},
		{"misspelt Name", call(`{"callId":"c1","Name":"ask_user_question","arguments":` + ask + `}`), false},
		{"timeout 1.5", call(`{"callId":"c1","name":"ask_user_question","arguments":{"questions":[{"id":"q","question":"Ready?"}],"timeout":1.5}}`), false},
		{"timeout 0", call(`{"callId":"c1","name":"ask_user_question","arguments":{"questions":[{"id":"q","question":"Ready?"}],"timeout":0}}`), false},
		{"timeout 2147484", call(`{"callId":"c1","name":"ask_user_question","arguments":{"questions":[{"id":"q","question":"Ready?"}],"timeout":2147484}}`), false},
		{`timeout "5"`, call(`{"callId":"c1","name":"ask_user_question","arguments":{"questions":[{"id":"q","question":"Ready?"}],"timeout":"5"}}`), false},
		{"empty questions", call(`{"callId":"c1","name":"ask_user_question","arguments":{"questions":[]}}`), false},
		{"unknown argument", call(`{"callId":"c1","name":"ask_user_question","arguments":{"questions":[{"id":"q","question":"Ready?"}],"Timeout":30}}`), false},
		{"question without text", call(`{"callId":"c1","name":"ask_user_question","arguments":{"questions":[{"id":"q","question":""}]}}`), false},
		{"pending result", result(`{"pending":true,"callId":"c1","message":"later"}`), true},
		{"answer batch", result(`{"answers":[{"id":"q","selected":["yes"]}]}`), true},
		{"misspelt result callID", `{"type":"tool/result","at":"2026-12-03T10:00:00Z","data":{"callID":"c1","name":"ask_user_question","content":[]}}`, false},
	}
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			problems, err := schemas.Validate(schemas.EventSchema, []byte(f.data))
			require.NoError(t, err)
			_, foldRejects := logcheck.Rejected(sessionlog.Stored{Seq: 1, Data: []byte(f.data)})
			r, err := logcheck.Check([]sessionlog.Stored{{Seq: 1, HasPrev: true, Data: []byte(f.data)}})
			require.NoError(t, err)
			if f.ok {
				assert.Empty(t, problems, "the schema takes it")
				assert.False(t, foldRejects, "the fold takes it")
				assert.Empty(t, r.Problems, "check takes it")
				return
			}
			assert.True(t, foldRejects || len(problems) > 0, "someone refuses it")
			assert.True(t, foldRejects, "the fold refuses it, as the schema or check does: %v %v", problems, r.Problems)
			assert.NotEmpty(t, r.Problems, "check names it")
		})
	}
}
