package streams_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/streams"
)

func TestSessionIDsThatWouldBeWildcardsAreRejected(t *testing.T) {
	for _, bad := range []string{"", "a.b", "*", ">", "a b", "ä", strings.Repeat("x", 129), "a/b", "a:b"} {
		_, err := streams.EventsSubject(bad)
		require.Error(t, err, "%q", bad)
		require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err))
	}
	subj, err := streams.EventsSubject("s-1_A")
	require.NoError(t, err)
	require.Equal(t, "holdover.session.s-1_A.events", subj)
	sid, ok := streams.SessionFromSubject(subj)
	require.True(t, ok)
	require.Equal(t, "s-1_A", sid)
}

func TestTokenIsOneToOneAndSafe(t *testing.T) {
	for _, id := range []string{"call_1", "toolu_01ABC", "a.b", "*", ">", "x y", "=abc", "ünï"} {
		tok, err := streams.Token(id)
		require.NoError(t, err)
		require.NotContains(t, tok, ".")
		require.NotContains(t, tok, "*")
		require.NotContains(t, tok, ">")
		require.NotContains(t, tok, " ")
		back, err := streams.FromToken(tok)
		require.NoError(t, err)
		require.Equal(t, id, back)
	}
	_, err := streams.Token("")
	require.Error(t, err)
}

func FuzzToken(f *testing.F) {
	f.Add("call_1")
	f.Add("a.b*>")
	f.Fuzz(func(t *testing.T, id string) {
		tok, err := streams.Token(id)
		if err != nil {
			return
		}
		require.False(t, strings.ContainsAny(tok, ".*> \t\r\n/"), "token %q", tok)
		back, err := streams.FromToken(tok)
		require.NoError(t, err)
		require.Equal(t, id, back)
	})
}

// D8: a late reply goes to a subject of its own call, which the Session's
// inbox readers cover next to the Session's own inbox subject; a call id
// that is not a plain token never adds a subject token or a wildcard.
func TestReplySubjectIsPerCall(t *testing.T) {
	subj, err := streams.ReplySubject("s1", "call_1")
	require.NoError(t, err)
	require.Equal(t, "holdover.session.s1.inbox.call_1", subj)
	subj, err = streams.ReplySubject("s1", "a.b*>")
	require.NoError(t, err)
	require.Equal(t, 4, strings.Count(subj, "."), subj)
	require.NotContains(t, subj, "*")
	_, err = streams.ReplySubject("s1", "")
	require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err))
	_, err = streams.ReplySubject("a.b", "c1")
	require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err))

	inbox, err := streams.InboxSubject("s1")
	require.NoError(t, err)
	require.Equal(t, "holdover.session.s1.inbox", inbox)
	_, err = streams.InboxSubject(">")
	require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err))
	filters, err := streams.InboxSubjects("s1")
	require.NoError(t, err)
	require.Equal(t, []string{"holdover.session.s1.inbox", "holdover.session.s1.inbox.*"}, filters)
	sid, ok := streams.SessionFromSubject(subj)
	require.True(t, ok)
	require.Equal(t, "s1", sid)
}

// A reply subject names its Session and its call, whatever the call id.
func TestParseReplySubjectReversesReplySubject(t *testing.T) {
	for _, id := range []string{"call_1", "deploy.1", "toolu_01ABC", "x y", "=abc"} {
		subject, err := streams.ReplySubject("s1", id)
		require.NoError(t, err)
		sid, callID, err := streams.ParseReplySubject(subject)
		require.NoError(t, err, subject)
		require.Equal(t, "s1", sid)
		require.Equal(t, id, callID)
	}
	for _, bad := range []string{"holdover.session.s1.inbox", "holdover.session.s1.events", "holdover.session.s1.inbox.a.b", "other.s1.inbox.c", "holdover.session.a*b.inbox.c", "holdover.session.s1.inbox.=!!"} {
		_, _, err := streams.ParseReplySubject(bad)
		require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err), "%q", bad)
	}
}
