package userquestions

import (
	"encoding/json"
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

// FuzzDecode holds DecodeRequest to the rule that keeps a gateway's check
// and the worker's reading of one request the same (issue 24): whatever it
// accepts, it read every field from the member of exactly that name, the
// one an exact lookup finds, and no member it accepted folds onto a field
// name without being it. The seeds are the lookalikes a folding decoder
// takes for "session": case, U+017F (ſ), U+212A (K), fullwidth letters,
// doubled keys, escapes.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"session":"s","callId":"c","answers":[{"id":"q","selected":["a"]}]}`))
	f.Add([]byte(`{"session":"a.b"}`))
	f.Add([]byte(`{} []`))
	f.Add([]byte("\x00{"))
	f.Add([]byte(`{"session":"s1","ſession":"s6","callId":"call_1","answers":[]}`))
	f.Add([]byte(`{"session":"s1","Session":"s6"}`))
	f.Add([]byte(`{"session":"s1","session":"s6"}`))
	f.Add([]byte(`{"session":"s1","\u0073ession":"s6"}`))
	f.Add([]byte(`{"session":"s1","\u017fession":"s6"}`))
	f.Add([]byte(`{"session":"s1","callId":"a","callKd":"b"}`))
	f.Add([]byte(`{"session":"s1","ｓｅｓｓｉｏｎ":"s6"}`))
	f.Add([]byte(`{"session":"s1","answers":[{"id":"q","ID":"r","selected":[]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var req holdover.AnswerRequest
		err := DecodeRequest(data, &req)
		if err != nil {
			require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err))
			return
		}
		var members map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(data, &members))
		for name := range members {
			require.Contains(t, []string{"session", "callId", "answers"}, name, "an accepted member is a field's exact name")
		}
		exact := func(name string) string {
			var s string
			if raw, ok := members[name]; ok {
				require.NoError(t, json.Unmarshal(raw, &s))
			}
			return s
		}
		require.Equal(t, exact("session"), req.Session, "the Session read is the one an exact lookup sees")
		require.Equal(t, exact("callId"), req.CallID)
	})
}

// Issue 24: a member that encoding/json would take for a field it is not
// exactly, or a field named twice, is refused, never read as that field.
func TestDecodeRequestRefusesLookalikeAndDoubledFields(t *testing.T) {
	for body, want := range map[string]string{
		`{"session":"s1","ſession":"s6"}`:            `unknown field "ſession"`,
		`{"ſession":"s6"}`:                           `unknown field "ſession"`,
		`{"Session":"s1"}`:                           `unknown field "Session"`,
		`{"SESSION":"s","callid":"c"}`:               `unknown field "SESSION"`,
		`{"session":"s1","callId":"c","callKd":"d"}`: `unknown field "callKd"`,
		`{"ｓｅｓｓｉｏｎ":"s6"}`:                           `unknown field "ｓｅｓｓｉｏｎ"`,
		`{"session":"s1","session":"s6"}`:            `names the field "session" twice`,
		`{"session":"s1","\u0073ession":"s6"}`:       `names the field "session" twice`,
		`{"session":"s1","callId":"c","answers":[{"id":"q","id":"r","selected":[]}]}`: `names the field "answers[0].id" twice`,
	} {
		var req holdover.AnswerRequest
		err := DecodeRequest([]byte(body), &req)
		require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err), body)
		require.ErrorContains(t, err, want, body)
	}
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
	require.NoError(t, Decode([]byte(`{"SESSION":"s","callid":"c"}`), &req), "a reply's keys match as encoding/json matches them")
	require.Equal(t, "s", req.Session)
}
