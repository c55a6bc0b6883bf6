package userquestions

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
)

// §8: an error keeps its code and full message across the wire and comes
// back as the same typed error.
func TestErrorReplyRebuildsTheTypedError(t *testing.T) {
	for _, code := range []holdover.Code{
		holdover.CodeReplyQueued, holdover.CodeBadAnswer, holdover.CodeCallerNotLive,
		holdover.CodeDelegatedCaller, holdover.CodeAskTimedOut, holdover.CodeBadRequest,
	} {
		sent := holdover.Newf(code, "line one\nline two for %s", code)
		msg := errorMsg("_INBOX.x", sent)
		require.Equal(t, string(code), msg.Header.Get(ErrorCodeHeader))

		got := replyError(msg)
		require.Equal(t, code, holdover.CodeOf(got))
		require.Equal(t, sent.Error(), got.Error(), "the body keeps the newline the header cannot")
		require.True(t, errors.Is(got, &holdover.Error{Code: code}))
		var typed *holdover.Error
		require.True(t, errors.As(got, &typed))
	}
}

func TestErrorWithoutCodeCrossesAsInternal(t *testing.T) {
	got := replyError(errorMsg("r", errors.New("disk on fire")))
	require.Equal(t, holdover.CodeInternal, holdover.CodeOf(got))
	require.Equal(t, "disk on fire", got.Error())
}

// A reply from a non-Go service may carry only the headers.
func TestErrorHeadersAloneAreEnough(t *testing.T) {
	msg := errorMsg("r", holdover.New(holdover.CodeReplyQueued, "queued"))
	msg.Data = []byte("not json")
	got := replyError(msg)
	require.Equal(t, holdover.CodeReplyQueued, holdover.CodeOf(got))
	require.Equal(t, "queued", got.Error())
}

func TestSuccessfulReplyIsNoError(t *testing.T) {
	msg, err := (&Service{}).replyMsg("r", map[string]bool{"accepted": true}, nil)
	require.NoError(t, err)
	require.NoError(t, replyError(msg))
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
		err := decode([]byte(body), &v)
		require.Error(t, err, name)
		require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err), name)
	}
	var v ViewRequest
	require.NoError(t, decode([]byte(" {\"session\":\"s-1\"}\n"), &v))
	require.Equal(t, "s-1", v.Session)
}

// Session ids that would be wildcards or extra subject tokens are
// BAD_REQUEST (DESIGN "Ids that go into subjects or keys are validated").
func TestCheckSessionRejectsWildcards(t *testing.T) {
	for _, sid := range []string{"a.b", "*", ">", "", "a b"} {
		require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(checkSession(sid)), "%q", sid)
	}
	require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(checkCall("")))
	require.NoError(t, checkCall("toolu_01.*>"), "call ids are tokenised, so any non-empty id is fine")
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"session":"s","callId":"c","answers":[{"id":"q","selected":["a"]}]}`))
	f.Add([]byte(`{"session":"a.b"}`))
	f.Add([]byte(`{} []`))
	f.Add([]byte("\x00{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var req holdover.AnswerRequest
		err := decode(data, &req)
		if err != nil {
			require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err))
		}
	})
}
