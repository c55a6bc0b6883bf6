package projection_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/inbox"
	"github.com/holdover-dev/holdover/projection"
)

// The schemas a model request can offer for ask_user_question: the timed
// one has a timeout property (M2), the legacy one does not (M1).
const (
	timedSchema = `{"type":"object","properties":{` +
		`"questions":{"type":"array","items":{"type":"object","properties":{"id":{"type":"string"},"question":{"type":"string"}}}},` +
		`"timeout":{"type":"integer","description":"seconds to wait; -1 waits without a deadline"}},` +
		`"required":["questions"]}`
	legacySchema = `{"type":"object","properties":{` +
		`"questions":{"type":"array","items":{"type":"object"}}},"required":["questions"]}`
	runCodeSchema = `{"type":"object","properties":{"code":{"type":"string"},"timeout":{"type":"integer"}}}`
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// session builds a Session log with consecutive seqs from 1.
type session struct{ log []events.Event }

func (s *session) add(bodies ...events.Body) *session {
	for _, b := range bodies {
		seq := uint64(len(s.log) + 1)
		s.log = append(s.log, events.Event{Seq: seq, Type: b.EventType(), At: t0.Add(time.Duration(seq) * time.Second), Body: b})
	}
	return s
}

func (s *session) fold() projection.View { return projection.Fold(s.log) }

// header offers tools, each given as a name and an input schema.
func header(nameSchema ...string) *events.RequestHeader {
	h := &events.RequestHeader{Model: "scripted", Tools: []events.ToolSchema{}}
	for i := 0; i+1 < len(nameSchema); i += 2 {
		h.Tools = append(h.Tools, events.ToolSchema{Name: nameSchema[i], InputSchema: json.RawMessage(nameSchema[i+1])})
	}
	return h
}

func timedHeader() *events.RequestHeader {
	return header("run_code", runCodeSchema, holdover.ToolName, timedSchema)
}

func legacyHeader() *events.RequestHeader {
	return header("run_code", runCodeSchema, holdover.ToolName, legacySchema)
}

// twoQuestions are the questions of most calls below.
var twoQuestions = []holdover.Question{
	{ID: "db", Question: "Which database?", Options: []holdover.Option{{Label: "Postgres (Recommended)"}, {Label: "SQLite"}}},
	{ID: "name", Question: "Project name?"},
}

func argsJSON(qs []holdover.Question, timeout *int64) json.RawMessage {
	data, err := json.Marshal(holdover.ToolArgs{Questions: qs, Timeout: timeout})
	if err != nil {
		panic(err)
	}
	return data
}

func seconds(n int64) *int64 { return &n }

// ask is a valid ask_user_question call with a 30 s timeout.
func ask(callID string) *events.ToolCall {
	return askWith(callID, argsJSON(twoQuestions, seconds(30)))
}

func askWith(callID string, args json.RawMessage) *events.ToolCall {
	return &events.ToolCall{CallID: callID, Name: holdover.ToolName, Arguments: args}
}

func pendingText(callID string) string {
	data, _ := json.Marshal(holdover.Pending{Pending: true, CallID: callID, Message: "No answer batch arrived before the timeout."})
	return string(data)
}

func pending(callID string) *events.ToolResult {
	return &events.ToolResult{CallID: callID, Name: holdover.ToolName, Content: events.Text(pendingText(callID))}
}

func answered(callID string, answers ...holdover.Answer) *events.ToolResult {
	return &events.ToolResult{CallID: callID, Name: holdover.ToolName, Content: events.Text(holdover.Batch{Answers: answers}.String())}
}

func failedWith(callID string, code holdover.Code) *events.ToolResult {
	return &events.ToolResult{CallID: callID, Name: holdover.ToolName, Content: events.Text("the tool failed: " + string(code)), IsError: true, Error: &events.ToolError{Code: code}}
}

// bothAnswered answers twoQuestions.
var bothAnswered = []holdover.Answer{{ID: "db", Selected: []string{"SQLite"}}, {ID: "name", Selected: []string{}, Custom: "holdover"}}

func replyMessage(messageID, callID string, answers []holdover.Answer) events.Message {
	m, err := events.NewReply(messageID, callID, twoQuestions, answers)
	if err != nil {
		panic(err)
	}
	return m
}

// admitted is the admission of a late reply as a user message (D5).
func admitted(messageID, callID string, answers []holdover.Answer) *events.UserMessage {
	return &events.UserMessage{Message: replyMessage(messageID, callID, answers)}
}

func spliced(messageID, callID string, answers []holdover.Answer) *events.InboxSpliced {
	return &events.InboxSpliced{Message: replyMessage(messageID, callID, answers), InboxSeq: 1}
}

func dispatched(parent, callID string, args json.RawMessage, result *events.ToolResult) *events.PTCDispatch {
	return &events.PTCDispatch{ParentCallID: parent, CallID: callID, Name: holdover.ToolName, Arguments: args, Content: result.Content, IsError: result.IsError, Error: result.Error}
}

func activeIDs(v projection.View) []string {
	ids := []string{}
	for _, c := range v.Active {
		ids = append(ids, c.CallID)
	}
	return ids
}

func settledIDs(v projection.View) []string {
	ids := []string{}
	for _, s := range v.Settled {
		ids = append(ids, s.CallID)
	}
	return ids
}

func statusOf(t *testing.T, v projection.View, callID string) projection.Status {
	t.Helper()
	c, ok := v.Find(callID)
	require.Truef(t, ok, "call %s is not active; active %v, settled %v", callID, activeIDs(v), settledIDs(v))
	return c.Status
}

// checkInvariants asserts what every View must hold: call ids unique across
// Active and Settled, so no call is both.
func checkInvariants(t testing.TB, v projection.View) {
	t.Helper()
	seen := map[string]string{}
	for _, c := range v.Active {
		if where, dup := seen[c.CallID]; dup {
			t.Fatalf("call %s is active and also %s", c.CallID, where)
		}
		seen[c.CallID] = "active"
		if c.Status != projection.Open && c.Status != projection.Continued {
			t.Fatalf("call %s has status %q", c.CallID, c.Status)
		}
	}
	for _, s := range v.Settled {
		if where, dup := seen[s.CallID]; dup {
			t.Fatalf("call %s is settled and also %s", s.CallID, where)
		}
		seen[s.CallID] = "settled"
		if s.Answers == nil {
			t.Fatalf("settled call %s has no answers list", s.CallID)
		}
	}
}

func TestEmptyViewEncodesEmptyLists(t *testing.T) {
	for name, v := range map[string]projection.View{"New": projection.New(), "Fold(nil)": projection.Fold(nil), "zero": {}} {
		data, err := json.Marshal(v)
		require.NoError(t, err)
		assert.JSONEq(t, `{"active":[],"settled":[],"timed":false,"lastSeq":0}`, string(data), name)
	}
	// An operator reading a Session whose calls all went away sees [] too.
	v := new(session).add(timedHeader(), ask("c1"), failedWith("c1", holdover.CodeAskAborted)).fold()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	assert.JSONEq(t, `{"active":[],"settled":[],"timed":true,"lastSeq":3}`, string(data))
}

func TestTimedDetection_D2(t *testing.T) {
	cases := []struct {
		name   string
		header *events.RequestHeader
		timed  bool
	}{
		{"timed schema", timedHeader(), true},
		{"timed schema without a type", header(holdover.ToolName, `{"properties":{"questions":{},"timeout":{"type":"integer"}}}`), true},
		{"timed schema alone", header(holdover.ToolName, timedSchema), true},
		{"legacy schema", legacyHeader(), false},
		{"no tools", header(), false},
		{"nil tool list", &events.RequestHeader{Model: "m"}, false},
		{"only run_code, which has its own timeout", header("run_code", runCodeSchema), false},
		{"timeout on another tool", header("wait_for", `{"type":"object","properties":{"timeout":{}}}`, holdover.ToolName, legacySchema), false},
		{"unparsable schema", header(holdover.ToolName, `{"type":"object","properties":`), false},
		{"no schema", header(holdover.ToolName, ``), false},
		{"schema is not an object", header(holdover.ToolName, `["timeout"]`), false},
		{"not an object schema", header(holdover.ToolName, `{"type":"string","properties":{"timeout":{}}}`), false},
		{"properties is not an object", header(holdover.ToolName, `{"type":"object","properties":["timeout"]}`), false},
		{"timeout is only required, not a property", header(holdover.ToolName, `{"type":"object","properties":{"questions":{}},"required":["timeout"]}`), false},
		{"null timeout property", header(holdover.ToolName, `{"type":"object","properties":{"timeout":null}}`), false},
		{"property named with other case", header(holdover.ToolName, `{"type":"object","properties":{"Timeout":{}}}`), false},
		{"tool name with other case", header("Ask_User_Question", timedSchema), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := new(session).add(tc.header, ask("c1")).fold()
			assert.Equal(t, tc.timed, v.Timed, "Timed")
			if tc.timed {
				assert.Equal(t, []string{"c1"}, activeIDs(v), "a call under a timed header is tracked (D3)")
			} else {
				assert.Empty(t, v.Active, "a call under a header without the timed schema is not tracked (M1)")
			}
		})
	}
}

// The verdict on a schema is remembered; many distinct schemas, and huge
// ones, must still each be judged by their own text (D2).
func TestTimedDetectionAcrossManySchemas_D2(t *testing.T) {
	for i := range 300 {
		timed := i%3 != 0
		props := fmt.Sprintf(`"questions":{"description":"variant %d %s"}`, i, strings.Repeat("x", i*i))
		if timed {
			props += `,"timeout":{"type":"integer"}`
		}
		v := new(session).add(header(holdover.ToolName, `{"type":"object","properties":{`+props+`}}`)).fold()
		require.Equal(t, timed, v.Timed, "schema variant %d", i)
	}
}

// Workers fold many Sessions at once; the remembered schema verdicts are
// shared between them (run with -race).
func TestFoldConcurrently(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				timed := (g+i)%2 == 0
				props := fmt.Sprintf(`"questions":{"description":"worker %d, %d"}`, g, i%70)
				if timed {
					props += `,"timeout":{}`
				}
				v := new(session).add(header(holdover.ToolName, `{"properties":{`+props+`}}`), ask("c1")).fold()
				if v.Timed != timed || (len(v.Active) == 1) != timed {
					t.Errorf("worker %d fold %d: timed %v, active %v", g, i, v.Timed, activeIDs(v))
				}
			}
		})
	}
	wg.Wait()
}

func TestNoHeaderIsNotTimed_D2(t *testing.T) {
	v := new(session).add(ask("c1"), pending("c1")).fold()
	assert.False(t, v.Timed)
	assert.Empty(t, v.Active)
	assert.Empty(t, v.Settled)
}

// The latest header decides (D2): switching schemas mid-Session changes how
// new calls are read, never the state of calls already open.
func TestHeaderSwitchingMidSession_D2(t *testing.T) {
	s := new(session).add(
		legacyHeader(),
		ask("legacy-1"), // not tracked
		timedHeader(),
		ask("timed-1"), // open
		ask("timed-2"), // open
		legacyHeader(),
		ask("legacy-2"),     // not tracked
		pending("timed-1"),  // an already-open call still continues
		pending("legacy-1"), // an untracked call stays untracked
		answered("timed-2", bothAnswered...),
	)
	v := s.fold()
	assert.False(t, v.Timed)
	assert.Equal(t, []string{"timed-1"}, activeIDs(v))
	assert.Equal(t, projection.Continued, statusOf(t, v, "timed-1"))
	assert.Equal(t, []string{"timed-2"}, settledIDs(v))

	s.add(timedHeader(), ask("timed-3"), header(), ask("no-tools"))
	v = s.fold()
	assert.False(t, v.Timed, "a tool-less header is not timed")
	assert.Equal(t, []string{"timed-1", "timed-3"}, activeIDs(v))
	assert.Equal(t, projection.Open, statusOf(t, v, "timed-3"))
}

func TestOpenCall_D3(t *testing.T) {
	cases := []struct {
		name     string
		call     *events.ToolCall
		tracked  bool
		blocking bool
	}{
		{"positive timeout", ask("c1"), true, false},
		{"omitted timeout takes the configured default (M2)", askWith("c1", argsJSON(twoQuestions, nil)), true, false},
		{"null timeout is omitted", askWith("c1", json.RawMessage(`{"questions":[{"id":"a","question":"A?"}],"timeout":null}`)), true, false},
		{"timeout 1", askWith("c1", argsJSON(twoQuestions, seconds(1))), true, false},
		{"largest timeout", askWith("c1", argsJSON(twoQuestions, seconds(2147483))), true, false},
		{"timeout -1 is blocking and still tracked (M3)", askWith("c1", argsJSON(twoQuestions, seconds(-1))), true, true},
		{"timeout 0", askWith("c1", argsJSON(twoQuestions, seconds(0))), false, false},
		{"timeout -2", askWith("c1", argsJSON(twoQuestions, seconds(-2))), false, false},
		{"timeout past the limit", askWith("c1", argsJSON(twoQuestions, seconds(2147484))), false, false},
		{"fractional timeout", askWith("c1", json.RawMessage(`{"questions":[{"id":"a","question":"A?"}],"timeout":1.5}`)), false, false},
		{"string timeout", askWith("c1", json.RawMessage(`{"questions":[{"id":"a","question":"A?"}],"timeout":"30"}`)), false, false},
		{"no questions (M4)", askWith("c1", argsJSON(nil, seconds(30))), false, false},
		{"empty questions (M4)", askWith("c1", json.RawMessage(`{"questions":[],"timeout":30}`)), false, false},
		{"repeated question ids (M4)", askWith("c1", argsJSON([]holdover.Question{{ID: "a", Question: "A?"}, {ID: "a", Question: "B?"}}, nil)), false, false},
		{"question without text", askWith("c1", argsJSON([]holdover.Question{{ID: "a"}}, nil)), false, false},
		{"malformed arguments", askWith("c1", json.RawMessage(`{"questions":[{"id":"a","question":"A?"}`)), false, false},
		{"arguments are not an object", askWith("c1", json.RawMessage(`"ask me"`)), false, false},
		{"no arguments", askWith("c1", nil), false, false},
		{"another tool", &events.ToolCall{CallID: "c1", Name: "run_code", Arguments: argsJSON(twoQuestions, seconds(30))}, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := new(session).add(timedHeader(), tc.call).fold()
			assert.Equal(t, uint64(2), v.LastSeq)
			if !tc.tracked {
				assert.Empty(t, v.Active)
				return
			}
			require.Len(t, v.Active, 1)
			c := v.Active[0]
			assert.Equal(t, "c1", c.CallID)
			assert.Equal(t, projection.Open, c.Status)
			assert.Equal(t, tc.blocking, c.Blocking, "Blocking")
			assert.Equal(t, uint64(2), c.Seq, "Seq is the opening event's")
			assert.Empty(t, c.ParentCallID)
			var args holdover.ToolArgs
			require.NoError(t, json.Unmarshal(tc.call.Arguments, &args))
			assert.Equal(t, args.Questions, c.Questions)
		})
	}
}

func TestToolResult_D3(t *testing.T) {
	withText := func(text string) *events.ToolResult {
		return &events.ToolResult{CallID: "c1", Name: holdover.ToolName, Content: events.Text(text)}
	}
	allSkipped := []holdover.Answer{{ID: "db", Selected: []string{}}, {ID: "name", Selected: []string{}}}
	cases := []struct {
		name    string
		result  *events.ToolResult
		want    string // "continued", "settled" or "removed"
		answers []holdover.Answer
	}{
		{"pending", pending("c1"), "continued", nil},
		{"resume repair TOOL_OUTCOME_UNKNOWN", failedWith("c1", holdover.CodeToolOutcomeUnknown), "continued", nil},
		{"resume repair without the error flag", &events.ToolResult{CallID: "c1", Content: events.Text("interrupted"), Error: &events.ToolError{Code: holdover.CodeToolOutcomeUnknown}}, "continued", nil},
		{"answer batch", answered("c1", bothAnswered...), "settled", bothAnswered},
		{"answer batch in another order", answered("c1", bothAnswered[1], bothAnswered[0]), "settled", []holdover.Answer{bothAnswered[1], bothAnswered[0]}},
		{"all skipped is an answer, not pending (M5)", answered("c1", allSkipped...), "settled", allSkipped},
		{"answer batch split over parts", &events.ToolResult{CallID: "c1", Content: []events.Part{{Type: "text", Text: `{"answers":[{"id":"db","selected":["SQLite"]},`}, {Type: "text", Text: `{"id":"name","selected":[]}]}`}}}, "settled", []holdover.Answer{{ID: "db", Selected: []string{"SQLite"}}, {ID: "name", Selected: []string{}}}},
		{"pending with the error flag", &events.ToolResult{CallID: "c1", Content: events.Text(pendingText("c1")), IsError: true}, "removed", nil},
		{"answer batch with the error flag", &events.ToolResult{CallID: "c1", Content: answered("c1", bothAnswered...).Content, IsError: true}, "removed", nil},
		{"pending: false", withText(`{"pending":false,"callId":"c1"}`), "removed", nil},
		{"empty answers list", withText(`{"answers":[]}`), "removed", nil},
		{"answers list missing", withText(`{}`), "removed", nil},
		{"one question unanswered", answered("c1", bothAnswered[0]), "removed", nil},
		{"question answered twice", answered("c1", bothAnswered[0], bothAnswered[0], bothAnswered[1]), "removed", nil},
		{"answer to an unknown question", answered("c1", append([]holdover.Answer{{ID: "other"}}, bothAnswered...)...), "removed", nil},
		{"answer without id", withText(`{"answers":[{"selected":["x"]}]}`), "removed", nil},
		{"non-JSON text", withText("The user chose SQLite."), "removed", nil},
		{"no text", &events.ToolResult{CallID: "c1", Name: holdover.ToolName}, "removed", nil},
		{"empty text", withText(""), "removed", nil},
		{"cancelled", failedWith("c1", holdover.CodeAskCancelled), "removed", nil},
		{"aborted", failedWith("c1", holdover.CodeAskAborted), "removed", nil},
		{"timed out without pending", failedWith("c1", holdover.CodeAskTimedOut), "removed", nil},
		{"error without a code", &events.ToolResult{CallID: "c1", Content: events.Text("boom"), IsError: true}, "removed", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := new(session).add(timedHeader(), ask("c1"), tc.result).fold()
			checkInvariants(t, v)
			switch tc.want {
			case "continued":
				assert.Equal(t, projection.Continued, statusOf(t, v, "c1"))
				assert.Empty(t, v.Settled)
			case "settled":
				assert.Empty(t, v.Active)
				s, ok := v.FindSettled("c1")
				require.True(t, ok)
				assert.Equal(t, tc.answers, s.Answers)
				assert.Equal(t, twoQuestions, s.Questions)
				assert.False(t, s.Late, "a tool result settles in time")
				assert.Equal(t, uint64(3), s.Seq, "Seq is the settling event's")
			case "removed":
				assert.Empty(t, v.Active)
				assert.Empty(t, v.Settled)
			}
		})
	}
}

// Pending and skipped are different outcomes (M5, M6): a skipped question
// is an answer with empty selected, pending is no batch at all.
func TestSkippedIsNotPending_D3(t *testing.T) {
	skipped := []holdover.Answer{{ID: "db", Selected: []string{}}, {ID: "name", Selected: []string{}}}
	v := new(session).add(timedHeader(), ask("skip"), ask("wait"), answered("skip", skipped...), pending("wait")).fold()
	assert.Equal(t, []string{"wait"}, activeIDs(v))
	assert.Equal(t, projection.Continued, statusOf(t, v, "wait"))
	s, ok := v.FindSettled("skip")
	require.True(t, ok)
	for _, a := range s.Answers {
		assert.True(t, a.Skipped(), "answer %s", a.ID)
	}
	data, err := json.Marshal(s.Answers)
	require.NoError(t, err)
	assert.JSONEq(t, `[{"id":"db","selected":[]},{"id":"name","selected":[]}]`, string(data))
}

// Results only move open calls (D3): a result for a call that is not
// tracked, already continued or already settled changes nothing.
func TestResultForCallThatIsNotOpen_D3(t *testing.T) {
	base := new(session).add(timedHeader(), ask("cont"), ask("done"), pending("cont"), answered("done", bothAnswered...))
	before := base.fold()
	for _, r := range []*events.ToolResult{
		pending("unknown"),
		answered("unknown", bothAnswered...),
		failedWith("unknown", holdover.CodeAskAborted),
		answered("cont", bothAnswered...),
		failedWith("cont", holdover.CodeAskAborted),
		failedWith("cont", holdover.CodeToolOutcomeUnknown),
		pending("done"),
		failedWith("done", holdover.CodeAskAborted),
		{CallID: "cont"},
	} {
		s := &session{log: append([]events.Event(nil), base.log...)}
		after := s.add(r).fold()
		want := before.Clone()
		want.LastSeq = after.LastSeq
		assert.Equal(t, want, after, "result %s for %s", events.JoinText(r.Content), r.CallID)
	}
}

// A legacy call repaired on resume is still a legacy call (M1, D3).
func TestLegacyCallRepairedIsNotTracked_D3(t *testing.T) {
	v := new(session).add(legacyHeader(), ask("c1"), timedHeader(), failedWith("c1", holdover.CodeToolOutcomeUnknown)).fold()
	assert.True(t, v.Timed)
	assert.Empty(t, v.Active)
	assert.Empty(t, v.Settled)
}

func TestReusedCallIDMovesToTheEnd_D3(t *testing.T) {
	t.Run("active", func(t *testing.T) {
		v := new(session).add(timedHeader(), ask("a"), ask("b"), pending("a"), ask("c"),
			askWith("a", argsJSON([]holdover.Question{{ID: "again", Question: "Again?"}}, seconds(-1)))).fold()
		checkInvariants(t, v)
		assert.Equal(t, []string{"b", "c", "a"}, activeIDs(v))
		a, _ := v.Find("a")
		assert.Equal(t, projection.Open, a.Status, "the new call replaces the continued one")
		assert.Equal(t, "again", a.Questions[0].ID)
		assert.True(t, a.Blocking)
		assert.Equal(t, uint64(6), a.Seq)
	})
	t.Run("settled", func(t *testing.T) {
		v := new(session).add(timedHeader(), ask("a"), ask("b"), answered("a", bothAnswered...), ask("a")).fold()
		checkInvariants(t, v)
		assert.Equal(t, []string{"b", "a"}, activeIDs(v))
		assert.Empty(t, v.Settled, "the reused id leaves no settled twin")
	})
	t.Run("untracked reuse leaves the old call", func(t *testing.T) {
		v := new(session).add(timedHeader(), ask("a"), pending("a"), askWith("a", json.RawMessage(`{`)), legacyHeader(), ask("a")).fold()
		assert.Equal(t, []string{"a"}, activeIDs(v))
		assert.Equal(t, projection.Continued, statusOf(t, v, "a"))
	})
}

func TestPTCDispatch_D4(t *testing.T) {
	valid := argsJSON(twoQuestions, seconds(20))
	cases := []struct {
		name     string
		header   *events.RequestHeader
		dispatch *events.PTCDispatch
		tracked  bool
	}{
		{"pending under a header listing only run_code", header("run_code", runCodeSchema), dispatched("run-1", "sub-1", valid, pending("sub-1")), true},
		{"pending under a legacy header", legacyHeader(), dispatched("run-1", "sub-1", valid, pending("sub-1")), true},
		{"pending before any header", nil, dispatched("run-1", "sub-1", valid, pending("sub-1")), true},
		{"pending with the default timeout", timedHeader(), dispatched("run-1", "sub-1", argsJSON(twoQuestions, nil), pending("sub-1")), true},
		{"error", timedHeader(), dispatched("run-1", "sub-1", valid, failedWith("sub-1", holdover.CodeAskAborted)), false},
		{"resume repair is an error here", timedHeader(), dispatched("run-1", "sub-1", valid, failedWith("sub-1", holdover.CodeToolOutcomeUnknown)), false},
		{"pending text flagged as error", timedHeader(), dispatched("run-1", "sub-1", valid, &events.ToolResult{Content: events.Text(pendingText("sub-1")), IsError: true}), false},
		{"answered in time", timedHeader(), dispatched("run-1", "sub-1", valid, answered("sub-1", bothAnswered...)), false},
		{"no result text", timedHeader(), dispatched("run-1", "sub-1", valid, &events.ToolResult{}), false},
		{"malformed arguments", timedHeader(), dispatched("run-1", "sub-1", json.RawMessage(`{"questions":`), pending("sub-1")), false},
		{"empty questions", timedHeader(), dispatched("run-1", "sub-1", argsJSON(nil, seconds(20)), pending("sub-1")), false},
		{"bad timeout", timedHeader(), dispatched("run-1", "sub-1", argsJSON(twoQuestions, seconds(0)), pending("sub-1")), false},
		{"another tool", timedHeader(), &events.PTCDispatch{ParentCallID: "run-1", CallID: "sub-1", Name: "read_file", Arguments: valid, Content: pending("sub-1").Content}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := new(session)
			if tc.header != nil {
				s.add(tc.header)
			}
			v := s.add(tc.dispatch).fold()
			if !tc.tracked {
				assert.Empty(t, v.Active)
				assert.Empty(t, v.Settled)
				return
			}
			require.Len(t, v.Active, 1)
			c := v.Active[0]
			assert.Equal(t, "sub-1", c.CallID)
			assert.Equal(t, projection.Continued, c.Status)
			assert.Equal(t, "run-1", c.ParentCallID)
			assert.Equal(t, twoQuestions, c.Questions)
			assert.Equal(t, v.LastSeq, c.Seq)
		})
	}
}

func TestPTCDispatchRepeat_D4(t *testing.T) {
	args := argsJSON(twoQuestions, seconds(20))
	v := new(session).add(
		header("run_code", runCodeSchema),
		dispatched("run-1", "sub-1", args, pending("sub-1")),
		dispatched("run-1", "sub-2", args, pending("sub-2")),
		dispatched("run-2", "sub-1", argsJSON([]holdover.Question{{ID: "x", Question: "X?"}}, nil), pending("sub-1")),
	).fold()
	checkInvariants(t, v)
	assert.Equal(t, []string{"sub-2", "sub-1"}, activeIDs(v))
	c, _ := v.Find("sub-1")
	assert.Equal(t, "run-2", c.ParentCallID)
	assert.Equal(t, "x", c.Questions[0].ID)

	// A dispatch that does not enter leaves the earlier entry alone.
	v.Apply(events.Event{Seq: v.LastSeq + 1, Type: events.TypePTCDispatch, Body: dispatched("run-3", "sub-2", args, failedWith("sub-2", holdover.CodeAskAborted))})
	assert.Equal(t, []string{"sub-2", "sub-1"}, activeIDs(v))

	// A pending dispatch with a settled id replaces the settled entry.
	v.Apply(events.Event{Seq: v.LastSeq + 1, Type: events.TypeUserMessage, Body: admitted("m1", "sub-2", bothAnswered)})
	require.Equal(t, []string{"sub-2"}, settledIDs(v))
	v.Apply(events.Event{Seq: v.LastSeq + 1, Type: events.TypePTCDispatch, Body: dispatched("run-4", "sub-2", args, pending("sub-2"))})
	checkInvariants(t, v)
	assert.Equal(t, []string{"sub-1", "sub-2"}, activeIDs(v))
	assert.Empty(t, v.Settled)
}

func TestLateReplySettles_D5(t *testing.T) {
	t.Run("continued call", func(t *testing.T) {
		v := new(session).add(timedHeader(), ask("c1"), pending("c1"), admitted("m1", "c1", bothAnswered)).fold()
		assert.Empty(t, v.Active)
		s, ok := v.FindSettled("c1")
		require.True(t, ok)
		assert.Equal(t, bothAnswered, s.Answers)
		assert.Equal(t, twoQuestions, s.Questions)
		assert.True(t, s.Late)
		assert.Equal(t, uint64(4), s.Seq)
	})
	t.Run("open call", func(t *testing.T) {
		v := new(session).add(timedHeader(), ask("c1"), admitted("m1", "c1", bothAnswered)).fold()
		s, ok := v.FindSettled("c1")
		require.True(t, ok)
		assert.True(t, s.Late)
		// The tool result that follows finds no open call.
		v.Apply(events.Event{Seq: 4, Type: events.TypeToolResult, Body: pending("c1")})
		assert.Empty(t, v.Active)
		assert.Equal(t, []string{"c1"}, settledIDs(v))
	})
	t.Run("PTC sub-call", func(t *testing.T) {
		v := new(session).add(dispatched("run-1", "sub-1", argsJSON(twoQuestions, nil), pending("sub-1")), admitted("m1", "sub-1", bothAnswered)).fold()
		assert.Equal(t, []string{"sub-1"}, settledIDs(v))
	})
	t.Run("settled order is the order of settling", func(t *testing.T) {
		v := new(session).add(timedHeader(), ask("a"), ask("b"), ask("c"), pending("a"), pending("b"),
			admitted("m1", "b", bothAnswered), answered("c", bothAnswered...), admitted("m2", "a", bothAnswered)).fold()
		assert.Equal(t, []string{"b", "c", "a"}, settledIDs(v))
	})
}

func TestUnreadableReplySettlesWithEmptyBatch_D5(t *testing.T) {
	source := events.QuestionReply("c1")
	texts := map[string]string{
		"not JSON":          "SQLite, holdover",
		"wrong kind":        `{"kind":"note","answers":[]}`,
		"no answers":        `{"kind":"answer_to_pending_question","callId":"c1"}`,
		"answers misfit":    replyText(t, "c1", bothAnswered[:1]),
		"answers unknown":   replyText(t, "c1", append([]holdover.Answer{{ID: "zzz"}}, bothAnswered...)),
		"empty text":        "",
		"empty answers":     replyText(t, "c1", []holdover.Answer{}),
		"repeated answers ": replyText(t, "c1", append(bothAnswered, bothAnswered[0])),
	}
	for name, text := range texts {
		t.Run(name, func(t *testing.T) {
			msg := &events.UserMessage{Message: events.Message{ID: "m1", Role: "user", Content: events.Text(text), Source: source}}
			v := new(session).add(timedHeader(), ask("c1"), pending("c1"), msg).fold()
			assert.Empty(t, v.Active)
			s, ok := v.FindSettled("c1")
			require.True(t, ok)
			assert.Equal(t, []holdover.Answer{}, s.Answers)
			assert.True(t, s.Late)
			data, err := json.Marshal(s)
			require.NoError(t, err)
			assert.Contains(t, string(data), `"answers":[]`)
		})
	}
}

func replyText(t *testing.T, callID string, answers []holdover.Answer) string {
	t.Helper()
	m, err := events.NewReply("m", callID, twoQuestions, answers)
	require.NoError(t, err)
	return events.JoinText(m.Content)
}

// The source identifies a reply, never its text (G1, D5).
func TestOrdinaryMessageWithReplyTextSettlesNothing_D5_G1(t *testing.T) {
	reply := replyMessage("m1", "c1", bothAnswered)
	pasted := reply
	pasted.ID = "m2"
	pasted.Source = events.Source{Kind: events.SourceUser}
	v := new(session).add(timedHeader(), ask("c1"), pending("c1"),
		&events.UserMessage{Message: pasted},
		&events.InboxSpliced{Message: pasted},
	).fold()
	assert.Equal(t, []string{"c1"}, activeIDs(v))
	c, _ := v.Find("c1")
	assert.Equal(t, projection.Continued, c.Status)
	assert.Nil(t, c.Queued)
	assert.Empty(t, v.Settled)
}

func TestReplyForUnknownOrSettledCall_D5(t *testing.T) {
	base := new(session).add(timedHeader(), ask("c1"), ask("c2"), pending("c1"), answered("c2", bothAnswered...))
	before := base.fold()
	for _, body := range []events.Body{
		admitted("m1", "nope", bothAnswered),
		admitted("m1", "c2", []holdover.Answer{{ID: "db", Selected: []string{"Postgres (Recommended)"}}, {ID: "name"}}),
		spliced("m1", "nope", bothAnswered),
		spliced("m1", "c2", bothAnswered),
	} {
		s := &session{log: append([]events.Event(nil), base.log...)}
		after := s.add(body).fold()
		want := before.Clone()
		want.LastSeq = after.LastSeq
		assert.Equal(t, want, after, "%s", body.EventType())
	}
}

// Issue 10: a reply's source names who gave it (the user a gateway
// authenticated); the View shows it beside the queued and the settled
// answers, so an operator can tell who approved what.
func TestReplyNamesWhoAnswered(t *testing.T) {
	byAna := func(b events.Body) events.Body {
		switch e := b.(type) {
		case *events.InboxSpliced:
			e.Message.Source.User = "ana"
		case *events.UserMessage:
			e.Message.Source.User = "ana"
		}
		return b
	}
	s := new(session).add(timedHeader(), ask("c1"), pending("c1"), byAna(spliced("m1", "c1", bothAnswered)))
	queued := s.fold()
	c, _ := queued.Find("c1")
	require.NotNil(t, c.Queued)
	assert.Equal(t, "ana", c.Queued.By)
	v := s.add(byAna(admitted("m1", "c1", bothAnswered))).fold()
	require.Len(t, v.Settled, 1)
	assert.Equal(t, "ana", v.Settled[0].By)
	assert.True(t, v.Settled[0].Late)
}

func TestInboxQueued_D5_D8(t *testing.T) {
	t.Run("splices alone never settle", func(t *testing.T) {
		v := new(session).add(timedHeader(), ask("c1"), pending("c1"), spliced("m1", "c1", bothAnswered),
			&events.InboxClaimed{MessageID: "m1"}, &events.StepEnd{Turn: "t1", Step: 1}).fold()
		assert.Empty(t, v.Settled)
		c, ok := v.Find("c1")
		require.True(t, ok)
		assert.Equal(t, projection.Continued, c.Status)
		require.NotNil(t, c.Queued)
		assert.Equal(t, projection.Queued{MessageID: "m1", Answers: bothAnswered, Seq: 4}, *c.Queued)
	})
	t.Run("unreadable splice is queued with an empty batch", func(t *testing.T) {
		m := events.Message{ID: "m1", Role: "user", Content: events.Text("???"), Source: events.QuestionReply("c1")}
		v := new(session).add(timedHeader(), ask("c1"), pending("c1"), &events.InboxSpliced{Message: m}).fold()
		c, _ := v.Find("c1")
		require.NotNil(t, c.Queued)
		assert.Equal(t, []holdover.Answer{}, c.Queued.Answers)
	})
	t.Run("discard clears only its message", func(t *testing.T) {
		v := new(session).add(timedHeader(), ask("c1"), ask("c2"), pending("c1"), pending("c2"),
			spliced("m1", "c1", bothAnswered), spliced("m2", "c2", bothAnswered),
			&events.InboxDiscarded{MessageID: "m1", Reason: "cancelled"},
			&events.InboxDiscarded{MessageID: "unknown"}).fold()
		c1, _ := v.Find("c1")
		c2, _ := v.Find("c2")
		assert.Nil(t, c1.Queued, "discard releases the reply (P5)")
		require.NotNil(t, c2.Queued)
		assert.Equal(t, "m2", c2.Queued.MessageID)
		assert.Equal(t, projection.Continued, c1.Status, "the question stays answerable")
	})
	t.Run("turn end releases every queued reply", func(t *testing.T) {
		v := new(session).add(timedHeader(), ask("c1"), ask("c2"), pending("c1"), pending("c2"),
			spliced("m1", "c1", bothAnswered), spliced("m2", "c2", bothAnswered), &events.TurnEnd{Turn: "t1"}).fold()
		for _, c := range v.Active {
			assert.Nil(t, c.Queued, c.CallID)
			assert.Equal(t, projection.Continued, c.Status)
		}
		assert.Empty(t, v.Settled)
	})
	t.Run("a later splice replaces the queued reply", func(t *testing.T) {
		v := new(session).add(timedHeader(), ask("c1"), pending("c1"), spliced("m1", "c1", bothAnswered), &events.TurnEnd{Turn: "t1"},
			spliced("m2", "c1", bothAnswered)).fold()
		c, _ := v.Find("c1")
		require.NotNil(t, c.Queued)
		assert.Equal(t, "m2", c.Queued.MessageID)
	})
	t.Run("a released reply is remembered, and a claim of it queues it again", func(t *testing.T) {
		s := new(session).add(timedHeader(), ask("c1"), pending("c1"), spliced("m1", "c1", bothAnswered),
			&events.InboxClaimed{MessageID: "m1"}, &events.TurnEnd{Turn: "t1"})
		v := s.fold()
		c, _ := v.Find("c1")
		assert.Nil(t, c.Queued, "the Turn ended without admitting it (D8)")
		require.NotNil(t, c.Released)
		assert.Equal(t, projection.Queued{MessageID: "m1", Answers: bothAnswered, Seq: 4}, *c.Released)
		assert.Equal(t, inbox.Logged{Released: "m1"}, c.Logged())

		// The restarted agent restores the reply from its splice and claims it (D8).
		v = s.add(&events.InboxClaimed{MessageID: "m1"}).fold()
		c, _ = v.Find("c1")
		require.NotNil(t, c.Queued)
		assert.Equal(t, projection.Queued{MessageID: "m1", Answers: bothAnswered, Seq: 4}, *c.Queued)
		assert.Nil(t, c.Released)
		assert.Equal(t, inbox.Logged{Held: "m1"}, v.Logged("c1"))

		v = s.add(&events.InboxDiscarded{MessageID: "m1"}, &events.InboxClaimed{MessageID: "other"}).fold()
		c, _ = v.Find("c1")
		assert.Nil(t, c.Queued, "a claim of another message restores nothing")
		assert.Equal(t, inbox.Logged{Released: "m1"}, v.Logged("c1"))
	})
	t.Run("admission settles and drops the queued reply", func(t *testing.T) {
		v := new(session).add(timedHeader(), ask("c1"), pending("c1"), spliced("m1", "c1", bothAnswered),
			&events.InboxClaimed{MessageID: "m1"}, admitted("m1", "c1", bothAnswered)).fold()
		assert.Empty(t, v.Active)
		s, ok := v.FindSettled("c1")
		require.True(t, ok)
		assert.Equal(t, bothAnswered, s.Answers)
		data, err := json.Marshal(v)
		require.NoError(t, err)
		assert.NotContains(t, string(data), "queued")
		assert.Equal(t, inbox.Logged{Admitted: true}, v.Logged("c1"), "nothing of a settled call waits")
		assert.Equal(t, inbox.Logged{}, v.Logged("unknown"))
	})
}

func TestRedeliveredEventsAreIgnored(t *testing.T) {
	s := new(session).add(timedHeader(), ask("c1"), pending("c1"), admitted("m1", "c1", bothAnswered))
	want := s.fold()

	v := projection.New()
	for _, e := range s.log {
		v.Apply(e)
		v.Apply(e) // redelivered
	}
	assert.Equal(t, want, v)

	// Replaying the whole log, or an earlier event under a later body, changes nothing.
	for _, e := range s.log {
		v.Apply(e)
	}
	v.Apply(events.Event{Seq: 2, Type: events.TypeToolCall, Body: ask("c9")})
	v.Apply(events.Event{Seq: 4, Type: events.TypeToolCall, Body: ask("c1")})
	assert.Equal(t, want, v)

	// Seq 0 is never a Session seq.
	v.Apply(events.Event{Type: events.TypeToolCall, Body: ask("c0")})
	assert.Equal(t, want, v)
}

func TestUnknownEventsAdvanceOnlyLastSeq(t *testing.T) {
	s := new(session).add(timedHeader(), ask("c1"))
	before := s.fold()
	v := before.Clone()
	v.Apply(events.Event{Seq: 3, Type: "tool/progress", Data: json.RawMessage(`{"callId":"c1","pending":true}`)})
	v.Apply(events.Event{Seq: 7, Type: events.TypeAssistantMessage, Body: &events.AssistantMessage{ID: "a1", Content: events.Text(pendingText("c1"))}})
	v.Apply(events.Event{Seq: 8, Type: events.TypeTurnStart, Body: &events.TurnStart{Turn: "t2"}})
	v.Apply(events.Event{Seq: 9, Type: events.TypeStepEnd, Body: &events.StepEnd{Turn: "t2"}})
	v.Apply(events.Event{Seq: 10, Type: events.TypeInboxClaimed, Body: &events.InboxClaimed{MessageID: "m1"}})
	before.LastSeq = 10
	assert.Equal(t, before, v)
}

func TestCloneIsDeep(t *testing.T) {
	v := new(session).add(timedHeader(), ask("c1"), ask("c2"), ask("c3"), pending("c1"), pending("c3"),
		spliced("m3", "c3", bothAnswered), &events.InboxDiscarded{MessageID: "m3"},
		spliced("m1", "c1", bothAnswered), answered("c2", bothAnswered...)).fold()
	snapshot, err := json.Marshal(v)
	require.NoError(t, err)

	c := v.Clone()
	assert.Equal(t, v, c)
	c.Active[0].Questions[0].Options[0].Label = "changed"
	c.Active[0].Queued.Answers[0].Selected[0] = "changed"
	c.Active[0].Queued.MessageID = "changed"
	c.Active[1].Released.Answers[0].Selected[0] = "changed"
	c.Settled[0].Answers[0].Selected[0] = "changed"
	c.Settled[0].Questions[1].ID = "changed"
	c.Apply(events.Event{Seq: c.LastSeq + 1, Type: events.TypeUserMessage, Body: admitted("m1", "c1", bothAnswered)})
	c.Apply(events.Event{Seq: c.LastSeq + 1, Type: events.TypeToolCall, Body: ask("c2")})

	after, err := json.Marshal(v)
	require.NoError(t, err)
	assert.JSONEq(t, string(snapshot), string(after), "folding a clone must not touch the original")
}

// A whole Session, end to end: the story of SPEC §3 in one log.
func TestSessionStory(t *testing.T) {
	s := new(session).add(
		&events.TurnStart{Turn: "t1"},
		timedHeader(),
		&events.ToolCall{CallID: "read-1", Name: "read_file", Arguments: json.RawMessage(`{"path":"go.mod"}`)},
		&events.ToolResult{CallID: "read-1", Name: "read_file", Content: events.Text("module x")},
		ask("q1"),
		pending("q1"),
		&events.StepEnd{Turn: "t1", Step: 1},
		timedHeader(),
		ask("q2"),
		answered("q2", bothAnswered...),
		&events.TurnEnd{Turn: "t1"},
		spliced("m1", "q1", bothAnswered),
		&events.TurnStart{Turn: "t2"},
		&events.InboxClaimed{MessageID: "m1"},
		admitted("m1", "q1", bothAnswered),
		&events.StepEnd{Turn: "t2", Step: 1},
	)
	v := s.fold()
	checkInvariants(t, v)
	data, err := json.Marshal(v)
	require.NoError(t, err)
	want := fmt.Sprintf(`{"active":[],"settled":[
		{"callId":"q2","questions":%[1]s,"answers":%[2]s,"late":false,"seq":10},
		{"callId":"q1","questions":%[1]s,"answers":%[2]s,"late":true,"seq":15}
	],"timed":true,"lastSeq":16}`, mustJSON(t, twoQuestions), mustJSON(t, bothAnswered))
	assert.JSONEq(t, want, string(data))
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	return string(data)
}

// Issue 20: a re-ask (a new tool/call of the same id) while a late reply
// is queued replaces the continued call and its queued reply (D3); the old
// reply, admitted after it, settles the new call with its answers (D5). So
// a runtime admits or discards a queued reply before it asks again under
// the same id (docs/agent-protocol.md §9).
func TestReAskWithAQueuedReply_D3_D5(t *testing.T) {
	s := new(session).add(timedHeader(), ask("c1"), pending("c1"), spliced("m1", "c1", bothAnswered))
	queued := s.fold()
	require.Len(t, queued.Active, 1)
	require.NotNil(t, queued.Active[0].Queued, "the reply is queued")

	reasked := s.add(ask("c1")).fold()
	require.Len(t, reasked.Active, 1)
	assert.Equal(t, projection.Open, reasked.Active[0].Status)
	assert.Nil(t, reasked.Active[0].Queued, "the new call has no queued reply")

	late := s.add(admitted("m1", "c1", bothAnswered)).fold()
	assert.Empty(t, late.Active)
	settled, ok := late.FindSettled("c1")
	require.True(t, ok, "the old reply settled the new call")
	assert.Equal(t, bothAnswered, settled.Answers)
}
