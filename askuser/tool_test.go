package askuser_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/askuser"
)

const timeoutRule = "timeout must be -1 or a positive integer up to 2147483 seconds"

// requireToolError checks a structured tool error: flagged, coded, and
// readable text that names the code first.
func requireToolError(t testing.TB, res holdover.ToolResult, code holdover.Code, contains ...string) {
	t.Helper()
	require.True(t, res.IsError, "result %q", res.Text)
	require.Equal(t, code, res.Code, "result %q", res.Text)
	require.True(t, strings.HasPrefix(res.Text, string(code)+": "), "text %q names its code first", res.Text)
	for _, c := range contains {
		require.Contains(t, res.Text, c)
	}
}

func requireAnswers(t testing.TB, res holdover.ToolResult) []holdover.Answer {
	t.Helper()
	require.False(t, res.IsError, "result %q", res.Text)
	require.Empty(t, res.Code)
	batch, err := holdover.ParseBatch([]byte(res.Text))
	require.NoError(t, err)
	return batch.Answers
}

func TestNewRejectsInvalidConfiguration(t *testing.T) {
	for _, def := range []int64{-2, 2147484, math.MinInt64, math.MaxInt64} {
		for _, mode := range []string{askuser.ModeLegacy, askuser.ModeTimed} {
			_, err := askuser.New(askuser.Config{Mode: mode, DefaultTimeout: def}, &questionService{})
			require.Error(t, err, "default %d", def)
			require.Equal(t, holdover.CodeBadTimeout, holdover.CodeOf(err), "M2: default %d", def)
			require.Contains(t, err.Error(), timeoutRule)
		}
	}
	for _, def := range []int64{-1, 0, 1, 45, 2147483} {
		_, err := askuser.New(askuser.Config{Mode: askuser.ModeTimed, DefaultTimeout: def}, &questionService{})
		require.NoError(t, err, "default %d", def)
	}
	for _, mode := range []string{"Timed", "blocking", "timed "} {
		_, err := askuser.New(askuser.Config{Mode: mode}, &questionService{})
		require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err), "mode %q", mode)
	}
	_, err := askuser.New(askuser.Config{}, nil)
	require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err))
}

func TestM1LegacyCallIsAnUnkeyedBlockingAsk(t *testing.T) {
	tool, svc := newTool(t, askuser.Config{})
	svc.outcome = answering(holdover.Answer{ID: "db", Selected: []string{"SQLite"}})

	res := tool.Call(t.Context(), call("call_1", oneQuestion("")))

	require.Equal(t, []holdover.Answer{{ID: "db", Selected: []string{"SQLite"}}}, requireAnswers(t, res))
	asks, timedAsks := svc.requests()
	require.Empty(t, timedAsks)
	require.Len(t, asks, 1)
	require.Empty(t, asks[0].CallID, "a legacy call is never keyed, so never tracked")
	require.Equal(t, "s-1", asks[0].Session)
	require.Equal(t, liveRoot, asks[0].Agent, "M9 still applies to legacy calls")
	require.Equal(t, "Which database?", asks[0].Questions[0].Question)
}

func TestM1LegacyCallMayComeWithoutAnAgent(t *testing.T) {
	tool, svc := newTool(t, askuser.Config{})
	c := call("call_1", oneQuestion(""))
	c.Agent = nil
	requireAnswers(t, tool.Call(t.Context(), c))
	asks, _ := svc.requests()
	require.Len(t, asks, 1)
	require.Nil(t, asks[0].Agent)
}

func TestM1LegacyRejectsATimeoutArgument(t *testing.T) {
	tool, svc := newTool(t, askuser.Config{})
	for _, timeout := range []string{"30", "-1", "0", `"30"`} {
		res := tool.Call(t.Context(), call("call_1", oneQuestion(`,"timeout":`+timeout)))
		requireToolError(t, res, holdover.CodeBadTimeout, "takes no timeout")
	}
	svc.requireNothingAsked(t)
}

func TestM2OmittedTimeoutUsesTheConfiguredDefault(t *testing.T) {
	for _, tc := range []struct {
		cfg  askuser.Config
		args string
		ms   int64
	}{
		{timed, oneQuestion(""), 120_000},
		{timed, oneQuestion(`,"timeout":null`), 120_000},
		{askuser.Config{Mode: askuser.ModeTimed, DefaultTimeout: 45}, oneQuestion(""), 45_000},
	} {
		tool, svc := newTool(t, tc.cfg)
		requireAnswers(t, tool.Call(t.Context(), call("call_1", tc.args)))
		asks, timedAsks := svc.requests()
		require.Empty(t, asks)
		require.Len(t, timedAsks, 1)
		require.Equal(t, tc.ms, timedAsks[0].TimeoutMs)
	}
}

func TestM3PositiveTimeoutRunsAskTimedInMilliseconds(t *testing.T) {
	for seconds, ms := range map[int64]int64{1: 1_000, 30: 30_000, 2147483: 2_147_483_000} {
		tool, svc := newTool(t, timed)
		requireAnswers(t, tool.Call(t.Context(), call("call_9", oneQuestion(fmt.Sprintf(`,"timeout":%d`, seconds)))))
		asks, timedAsks := svc.requests()
		require.Empty(t, asks)
		require.Equal(t, []holdover.AskTimedRequest{{
			Session:   "s-1",
			CallID:    "call_9",
			Agent:     liveRoot,
			Questions: []holdover.Question{{ID: "db", Question: "Which database?", Options: []holdover.Option{{Label: "Postgres (Recommended)"}, {Label: "SQLite"}}}},
			TimeoutMs: ms,
		}}, timedAsks)
		require.LessOrEqual(t, ms, int64(math.MaxInt32), "W1: the wait must stay a valid timer")
	}
}

func TestM3BlockingTimeoutIsAKeyedAskWithoutTimed(t *testing.T) {
	for _, cfg := range []askuser.Config{timed, {Mode: askuser.ModeTimed, DefaultTimeout: -1}} {
		args := oneQuestion(`,"timeout":-1`)
		if cfg.DefaultTimeout == -1 {
			args = oneQuestion("")
		}
		tool, svc := newTool(t, cfg)
		requireAnswers(t, tool.Call(t.Context(), call("call_2", args)))
		asks, timedAsks := svc.requests()
		require.Empty(t, timedAsks, "-1 never times out")
		require.Len(t, asks, 1)
		require.Equal(t, "call_2", asks[0].CallID, "a -1 call is keyed so the projection tracks it")
		require.Equal(t, liveRoot, asks[0].Agent)
	}
}

func TestM2M3InvalidTimeoutsAreRejectedWithTheRule(t *testing.T) {
	tool, svc := newTool(t, timed)
	for _, timeout := range []string{"0", "1.5", "2147484", "-2", `"60"`, `"-1"`, "true", "[60]", "{}", "1e400", "-0.5", "9223372036854775808"} {
		res := tool.Call(t.Context(), call("call_1", oneQuestion(`,"timeout":`+timeout)))
		requireToolError(t, res, holdover.CodeBadTimeout, timeoutRule)
	}
	svc.requireNothingAsked(t)
}

func TestM4TimedCallsRequireALiveAgent(t *testing.T) {
	tool, svc := newTool(t, timed)
	for _, extra := range []string{"", `,"timeout":30`, `,"timeout":-1`} {
		c := call("call_1", oneQuestion(extra))
		c.Agent = nil
		requireToolError(t, tool.Call(t.Context(), c), holdover.CodeCallerNotLive, "timed questions require a live agent")
	}
	svc.requireNothingAsked(t)
}

func TestTimedCallsRequireACallID(t *testing.T) {
	tool, svc := newTool(t, timed)
	requireToolError(t, tool.Call(t.Context(), call("", oneQuestion(""))), holdover.CodeBadRequest, "tool call id")
	svc.requireNothingAsked(t)
}

func TestM4QuestionIDsAreUniquePerCallButReusableAcrossCalls(t *testing.T) {
	for _, cfg := range []askuser.Config{{}, timed} {
		tool, svc := newTool(t, cfg)
		dup := `{"questions":[{"id":"q","question":"One?"},{"id":"q","question":"Two?"}]}`
		requireToolError(t, tool.Call(t.Context(), call("call_1", dup)), holdover.CodeBadRequest, `"q"`, "unique within a call")
		svc.requireNothingAsked(t)

		same := `{"questions":[{"id":"q","question":"Again?"}]}`
		requireAnswers(t, tool.Call(t.Context(), call("call_2", same)))
		requireAnswers(t, tool.Call(t.Context(), call("call_3", same)))
		asks, timedAsks := svc.requests()
		require.Equal(t, 2, len(asks)+len(timedAsks), "mode %q: both calls reuse id q", cfg.Mode)
	}
}

func TestM4EmptyQuestionsIsAStructuredError(t *testing.T) {
	for _, cfg := range []askuser.Config{{}, timed} {
		tool, svc := newTool(t, cfg)
		for _, args := range []string{`{"questions":[]}`, `{}`, `{"questions":null}`, `null`} {
			requireToolError(t, tool.Call(t.Context(), call("call_1", args)), holdover.CodeEmptyQuestions)
		}
		svc.requireNothingAsked(t)
	}
}

func TestM6PendingResultHasExactlyThePendingShape(t *testing.T) {
	tool, svc := newTool(t, timed)
	svc.outcome = pendingOutcome

	res := tool.Call(t.Context(), call("toolu_01XYZ", oneQuestion(`,"timeout":30`)))

	require.False(t, res.IsError)
	require.Empty(t, res.Code)
	// Exactly one JSON object, with exactly these members.
	dec := json.NewDecoder(strings.NewReader(res.Text))
	var members map[string]any
	require.NoError(t, dec.Decode(&members))
	_, err := dec.Token()
	require.ErrorIs(t, err, io.EOF, "nothing follows the pending object")
	require.Len(t, members, 3)
	require.Equal(t, true, members["pending"])
	require.Equal(t, "toolu_01XYZ", members["callId"])

	p, ok := holdover.ParsePending(res.Text)
	require.True(t, ok)
	for _, want := range []string{
		"No answer batch arrived before the timeout",
		"not a skipped answer",
		"Continue with useful work that does not depend on the answer",
		"The user may still answer",
		`user message of kind "answer_to_pending_question"`,
		`callId "toolu_01XYZ"`,
		"the original questions",
		"Do not treat this as permission",
	} {
		require.Contains(t, p.Message, want)
	}
	require.Equal(t, fmt.Sprintf(`{"pending":true,"callId":"toolu_01XYZ","message":%q}`, p.Message), res.Text)
}

func TestM7InTimeResultIsCompactAnswersPassedThroughUnchanged(t *testing.T) {
	answers := []holdover.Answer{
		{ID: "db", Selected: []string{"Postgres (Recommended)"}},
		{ID: "langs", Selected: []string{"Go", "Rust"}},
		{ID: "name", Custom: "call it <Holdover> & ship"},
		{ID: "later"},
	}
	args := `{"questions":[
		{"id":"db","question":"Which database?","options":[{"label":"Postgres (Recommended)"},{"label":"SQLite"}]},
		{"id":"langs","question":"Which languages?","multiSelect":true,"options":[{"label":"Go"},{"label":"Rust"},{"label":"Zig"}]},
		{"id":"name","question":"What name?"},
		{"id":"later","question":"Anything else?"}]}`
	for _, cfg := range []askuser.Config{{}, timed} {
		tool, svc := newTool(t, cfg)
		svc.outcome = answering(answers...)

		res := tool.Call(t.Context(), call("call_1", args))

		// Decoding reads a skipped selection back as [] rather than nil.
		want := append([]holdover.Answer(nil), answers...)
		want[2].Selected, want[3].Selected = []string{}, []string{}
		require.Equal(t, want, requireAnswers(t, res))
		var compact bytes.Buffer
		require.NoError(t, json.Compact(&compact, []byte(res.Text)))
		require.Equal(t, compact.String(), res.Text, "compact JSON")
		require.Contains(t, res.Text, `{"id":"later","selected":[]}`, "a skipped answer has an empty selected and no custom")
		require.True(t, strings.HasPrefix(res.Text, `{"answers":[{"id":"db","selected":["Postgres (Recommended)"]},{"id":"langs","selected":["Go","Rust"]},`), res.Text)
	}
}

func TestServiceErrorsReachTheModelAsStructuredToolErrors(t *testing.T) {
	for _, tc := range []struct {
		err      error
		code     holdover.Code
		contains []string
	}{
		{holdover.New(holdover.CodeNoProvider, "no Client can answer in Session s-1"), holdover.CodeNoProvider, []string{"no Client can answer in Session s-1.", "continue without the answer"}},
		{
			holdover.New(holdover.CodeDelegatedCaller, `session s-1 runs as a child owned by agent "root-0", so it cannot ask the user directly; put the open question in your final result for "root-0" to ask`),
			holdover.CodeDelegatedCaller, []string{`owned by agent "root-0"`, "put the open question in your final result"},
		},
		{holdover.New(holdover.CodeCallerNotLive, "agent-1 epoch 3 is not the live root"), holdover.CodeCallerNotLive, []string{"not the live root"}},
		{holdover.New(holdover.CodeAskAborted, "the wait was aborted"), holdover.CodeAskAborted, nil},
		{holdover.New(holdover.CodeDuplicateWait, "call_1 already has a wait"), holdover.CodeDuplicateWait, nil},
		{fmt.Errorf("askTimed: %w", holdover.New(holdover.CodeNoProvider, "nobody")), holdover.CodeNoProvider, []string{"askTimed: nobody"}},
		{errors.New("nats: connection closed"), holdover.CodeInternal, []string{"nats: connection closed"}},
	} {
		for _, extra := range []string{"", `,"timeout":30`, `,"timeout":-1`} {
			cfg := timed
			if extra == "" {
				cfg = askuser.Config{}
			}
			tool, svc := newTool(t, cfg)
			svc.outcome = failing(tc.err)
			requireToolError(t, tool.Call(t.Context(), call("call_1", oneQuestion(extra))), tc.code, tc.contains...)
		}
	}
}

func TestW5CallerCancellationIsAskAborted(t *testing.T) {
	for _, extra := range []string{"", `,"timeout":30`, `,"timeout":-1`} {
		cfg := timed
		if extra == "" {
			cfg = askuser.Config{}
		}
		tool, svc := newTool(t, cfg)
		entered := make(chan struct{})
		svc.outcome = func(ctx context.Context, _ []holdover.Question) (holdover.Outcome, error) {
			close(entered)
			<-ctx.Done()
			return holdover.Outcome{}, ctx.Err()
		}
		ctx, cancel := context.WithCancel(t.Context())
		results := make(chan holdover.ToolResult)
		go func() { results <- tool.Call(ctx, call("call_1", oneQuestion(extra))) }()
		<-entered
		cancel()
		requireToolError(t, <-results, holdover.CodeAskAborted)
	}
}

func TestW5AlreadyCancelledCallNeverReachesTheUser(t *testing.T) {
	tool, svc := newTool(t, timed)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	requireToolError(t, tool.Call(ctx, call("call_1", oneQuestion(""))), holdover.CodeAskAborted)
	svc.requireNothingAsked(t)
}

const planReview = `{"questions":[{"id":"plan","question":"Approve this plan?","detail":"1. Migrate\n2. Deploy","options":[{"label":"Approve"},{"label":"Revise"}]}],"intent":{"kind":"plan-review","approve":"Approve"}`

func TestM8PlanReviewKeepsTheBlockingAsk(t *testing.T) {
	intent := &holdover.Intent{Kind: holdover.IntentPlanReview, Approve: "Approve"}

	legacy, svc := newTool(t, askuser.Config{})
	requireAnswers(t, legacy.Call(t.Context(), call("call_1", planReview+`}`)))
	asks, _ := svc.requests()
	require.Len(t, asks, 1)
	require.Equal(t, intent, asks[0].Intent)
	require.Empty(t, asks[0].CallID)

	// Under the timed schema a plan review is still a blocking ask, keyed
	// like any timed-schema call, whether timeout is omitted or -1.
	for _, extra := range []string{"", `,"timeout":-1`} {
		tool, svc := newTool(t, timed)
		requireAnswers(t, tool.Call(t.Context(), call("call_2", planReview+extra+`}`)))
		asks, timedAsks := svc.requests()
		require.Empty(t, timedAsks)
		require.Len(t, asks, 1)
		require.Equal(t, intent, asks[0].Intent)
		require.Equal(t, "call_2", asks[0].CallID)
	}

	tool, svc := newTool(t, timed)
	requireToolError(t, tool.Call(t.Context(), call("call_3", planReview+`,"timeout":60}`)), holdover.CodeBadIntent, "omit timeout or pass -1")
	svc.requireNothingAsked(t)
}

func TestM8PlanReviewBadIntent(t *testing.T) {
	for _, args := range []string{
		// The approve label is not an option.
		`{"questions":[{"id":"plan","question":"Approve?","detail":"the plan","options":[{"label":"Yes"}]}],"intent":{"kind":"plan-review","approve":"Approve"}}`,
		// No detail to review.
		`{"questions":[{"id":"plan","question":"Approve?","options":[{"label":"Approve"}]}],"intent":{"kind":"plan-review","approve":"Approve"}}`,
		// Unknown kind.
		`{"questions":[{"id":"plan","question":"Approve?","detail":"the plan","options":[{"label":"Approve"}]}],"intent":{"kind":"vote","approve":"Approve"}}`,
	} {
		for _, cfg := range []askuser.Config{{}, timed} {
			tool, svc := newTool(t, cfg)
			requireToolError(t, tool.Call(t.Context(), call("call_1", args)), holdover.CodeBadIntent)
			svc.requireNothingAsked(t)
		}
	}
}

func TestArgumentsAreParsedStrictly(t *testing.T) {
	for _, args := range []string{
		``,
		`not json`,
		`[]`,
		`"questions"`,
		oneQuestion(`,"urgency":"high"`),
		`{"questions":[{"id":"q","question":"Q?","color":"red"}]}`,
		`{"questions":[{"id":"q","question":"Q?","options":[{"label":"A","weight":1}]}]}`,
		`{"questions":"which?"}`,
		oneQuestion("") + ` {}`,
		oneQuestion("") + `}`,
		`{"questions":[{"id":"q","question":"Q?"}]`,
		`{"questions":[{"id":"","question":"Q?"}]}`,
		`{"questions":[{"id":"q","question":""}]}`,
	} {
		for _, cfg := range []askuser.Config{{}, timed} {
			tool, svc := newTool(t, cfg)
			requireToolError(t, tool.Call(t.Context(), call("call_1", args)), holdover.CodeBadRequest)
			svc.requireNothingAsked(t)
		}
	}
}

func TestMalformedArgumentsAreExplainedInSchemaTerms(t *testing.T) {
	tool, _ := newTool(t, timed)
	for args, want := range map[string]string{
		`[]`:                     "the arguments must be an object, not array",
		`{"questions":"which?"}`: "questions must be an array, not string",
		`{"questions":[{"id":"q","question":"Q?","multiSelect":"yes"}]}`:     "questions.multiSelect must be a boolean, not string",
		`{"questions":[{"id":"q","question":"Q?","options":[{"label":1}]}]}`: "questions.options.label must be a string, not number",
		oneQuestion(`,"intent":"plan"`):                                      "intent must be an object, not string",
		oneQuestion(`,"urgency":"high"`):                                     `unknown field "urgency"`,
		oneQuestion("") + ` {}`:                                              "one JSON object with nothing after it",
	} {
		res := tool.Call(t.Context(), call("call_1", args))
		requireToolError(t, res, holdover.CodeBadRequest, want)
		require.NotContains(t, res.Text, "Go struct", "the model reads JSON terms, not Go types")
	}
}

// The tool holds no per-call state, so concurrent calls each get their own
// service request and their own result.
func TestConcurrentCallsAreIndependent(t *testing.T) {
	tool, svc := newTool(t, timed)
	svc.outcome = func(_ context.Context, qs []holdover.Question) (holdover.Outcome, error) {
		return holdover.Outcome{Answers: []holdover.Answer{{ID: qs[0].ID, Custom: qs[0].Question}}}, nil
	}
	const n = 16
	var wg sync.WaitGroup
	results := make([]holdover.ToolResult, n)
	for i := range n {
		wg.Go(func() {
			args := fmt.Sprintf(`{"questions":[{"id":"q","question":"question %d"}],"timeout":%d}`, i, i+1)
			results[i] = tool.Call(t.Context(), call(fmt.Sprintf("call_%d", i), args))
		})
	}
	wg.Wait()
	for i, res := range results {
		require.Equal(t, []holdover.Answer{{ID: "q", Selected: []string{}, Custom: fmt.Sprintf("question %d", i)}}, requireAnswers(t, res))
	}
	_, timedAsks := svc.requests()
	require.Len(t, timedAsks, n)
	for _, req := range timedAsks {
		var i int
		_, err := fmt.Sscanf(req.CallID, "call_%d", &i)
		require.NoError(t, err)
		require.Equal(t, int64(i+1)*1000, req.TimeoutMs)
	}
}
