package userquestions

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
)

func TestParseOutcomeAcceptsOnlyWellFormedOutcomes(t *testing.T) {
	for _, good := range []string{
		`{"kind":"settle","answers":[]}`,
		`{"kind":"settle","answers":[{"id":"q1","selected":["yes"]}]}`,
		`{"kind":"reject","error":{"code":"ASK_TIMED_OUT","message":"countdown"}}`,
		`{"kind":"delegate"}`,
	} {
		_, err := ParseOutcome([]byte(good))
		assert.NoError(t, err, good)
	}
	for _, bad := range []string{
		``, `null`, `[]`, `{}`, `{"kind":"reject"}`, `{"kind":"reject","error":{"message":"x"}}`,
		`{"kind":"answer","answers":[]}`, `{"kind":"delegate"} trailing`,
	} {
		_, err := ParseOutcome([]byte(bad))
		assert.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err), bad)
	}
}

func TestCancelReasonNamesHowTheWaitEnded(t *testing.T) {
	assert.Equal(t, ReasonAnswered, CancelReason(nil))
	assert.Equal(t, ReasonExpired, CancelReason(holdover.New(holdover.CodeAskTimedOut, "")))
	assert.Equal(t, ReasonAborted, CancelReason(holdover.New(holdover.CodeAskAborted, "")))
	assert.Equal(t, ReasonRejected, CancelReason(holdover.New(holdover.CodeAskCancelled, "")))
	assert.Equal(t, ReasonRejected, CancelReason(holdover.New(holdover.CodeNoProvider, "")))
}

// FuzzParseOutcome: outcomes come from any answerer on the network. None
// panics the parser, and an accepted one means the same after a round trip.
func FuzzParseOutcome(f *testing.F) {
	for _, seed := range []string{
		`{"kind":"settle","answers":[{"id":"q1","selected":["yes"],"custom":"x"}]}`,
		`{"kind":"reject","error":{"code":"ASK_CANCELLED","message":"closed"}}`,
		`{"kind":"delegate"}`, `{"kind":"settle","answers":null}`, `{`, `{"kind":1}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := ParseOutcome(data)
		if err != nil {
			require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err))
			return
		}
		again, err := json.Marshal(out)
		require.NoError(t, err)
		back, err := ParseOutcome(again)
		require.NoError(t, err)
		require.Equal(t, out.Kind, back.Kind)
		require.Equal(t, len(out.Answers), len(back.Answers))
	})
}
