package userquestions

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/streams"
)

// §8: an error keeps its code and full message across the wire and comes
// back as the same typed error.
func TestErrorReplyRebuildsTheTypedError(t *testing.T) {
	for _, code := range []holdover.Code{
		holdover.CodeReplyQueued, holdover.CodeBadAnswer, holdover.CodeCallerNotLive,
		holdover.CodeDelegatedCaller, holdover.CodeAskTimedOut, holdover.CodeBadRequest,
	} {
		sent := holdover.Newf(code, "line one\nline two for %s", code)
		msg := ErrorMsg("_INBOX.x", sent)
		require.Equal(t, string(code), msg.Header.Get(ErrorCodeHeader))

		got := ReplyError(msg)
		require.Equal(t, code, holdover.CodeOf(got))
		require.Equal(t, sent.Error(), got.Error(), "the body keeps the newline the header cannot")
		require.True(t, errors.Is(got, &holdover.Error{Code: code}))
		var typed *holdover.Error
		require.True(t, errors.As(got, &typed))
	}
}

func TestErrorWithoutCodeCrossesAsInternal(t *testing.T) {
	got := ReplyError(ErrorMsg("r", errors.New("disk on fire")))
	require.Equal(t, holdover.CodeInternal, holdover.CodeOf(got))
	require.Equal(t, "disk on fire", got.Error())
}

// A reply from a non-Go service may carry only the headers.
func TestErrorHeadersAloneAreEnough(t *testing.T) {
	msg := ErrorMsg("r", holdover.New(holdover.CodeReplyQueued, "queued"))
	msg.Data = []byte("not json")
	got := ReplyError(msg)
	require.Equal(t, holdover.CodeReplyQueued, holdover.CodeOf(got))
	require.Equal(t, "queued", got.Error())
}

func TestDecodeRejectsWhatIsNotOneJSONObject(t *testing.T) {
	for name, body := range map[string]string{
		"empty":     "",
		"space":     "   ",
		"array":     `[{"session":"s"}]`,
		"string":    `"s"`,
		"broken":    `{"session":`,
		"trailing":  `{"session":"s"} {"session":"t"}`,
		"wrongType": `{"session":7}`,
		"oversized": `{"session":"` + strings.Repeat("x", MaxRequestBytes) + `"}`,
	} {
		var v ViewRequest
		err := DecodeRequest([]byte(body), &v)
		require.Error(t, err, name)
		require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err), name)
	}
	var v ViewRequest
	require.NoError(t, DecodeRequest([]byte(" {\"session\":\"s-1\"}\n"), &v))
	require.Equal(t, "s-1", v.Session)
}

// Session ids that would be wildcards or extra subject tokens are
// BAD_REQUEST (DESIGN "Ids that go into subjects or keys are validated").
func TestCheckSessionRejectsWildcards(t *testing.T) {
	for _, sid := range []string{"a.b", "*", ">", "", "a b"} {
		require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(streams.CheckSession(sid)), "%q", sid)
	}
	require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(CheckCall("")))
	require.NoError(t, CheckCall("toolu_01.*>"), "call ids are tokenised, so any non-empty id is fine")
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"session":"s","callId":"c","answers":[{"id":"q","selected":["a"]}]}`))
	f.Add([]byte(`{"session":"a.b"}`))
	f.Add([]byte(`{} []`))
	f.Add([]byte("\x00{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var req holdover.AnswerRequest
		err := DecodeRequest(data, &req)
		if err != nil {
			require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err))
		}
	})
}

// Issue 8: an endpoint's request refuses a field it does not know, naming
// where it is, however deep; a reply or message ignores one, so a newer
// peer may add fields.
func TestDecodeRequestNamesAnUnknownField(t *testing.T) {
	for body, path := range map[string]string{
		`{"session":"s","agent":{"instance":"i","epoch":1,"session":"s"},"questions":[]}`:                  "agent.session",
		`{"session":"s","questions":[{"id":"q","question":"?","options":[{"label":"a","colour":"red"}]}]}`: "questions[0].options[0].colour",
		`{"session":"s","sesion":"t"}`: "sesion",
		`{"session":"s","callId":"c","answers":[{"id":"q","selected":[],"note":"x"}]}`: "answers[0].note",
	} {
		var req struct {
			holdover.AskRequest
			Answers []holdover.Answer `json:"answers"`
		}
		err := DecodeRequest([]byte(body), &req)
		require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err), body)
		require.ErrorContains(t, err, `request has an unknown field "`+path+`"`, body)

		require.NoError(t, Decode([]byte(body), &req), "a reply may carry fields this side does not know")
	}
	var req holdover.AskTimedRequest
	require.NoError(t, DecodeRequest([]byte(`{"SESSION":"s","callid":"c"}`), &req), "keys match as encoding/json matches them")
	require.Equal(t, "s", req.Session)
}
