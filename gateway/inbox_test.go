package gateway

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestInboxSubjectsFollowTheGrant(t *testing.T) {
	require.Equal(t, []string{"$KV.userQuestions.>"}, inboxSubjects(Grant{User: "bo", Sessions: []string{"s1", AllSessions}}))
	require.Equal(t, []string{"$KV.userQuestions.s1", "$KV.userQuestions.s2"}, inboxSubjects(Grant{User: "ana", Sessions: []string{"s2", "s1", "s2"}}))
}

func TestSummaryOfKeepsActiveCallsCountsSettledAndNamesOpenTimedCalls(t *testing.T) {
	view := `{
	  "active": [
	    {"callId": "c1", "status": "open", "questions": [{"id": "db", "question": "Which?"}], "seq": 3},
	    {"callId": "c2", "status": "open", "blocking": true, "questions": [], "seq": 4},
	    {"callId": "c3", "status": "continued", "questions": [], "seq": 5}
	  ],
	  "settled": [{"callId": "c0"}, {"callId": "c00"}],
	  "timed": true,
	  "lastSeq": 9
	}`
	s, open, err := summaryOf("s1", []byte(view))
	require.NoError(t, err)
	require.Equal(t, []string{"c1"}, open, "a keyed blocking call (M3) has no deadline to look up")
	require.Equal(t, 2, s.Settled)
	require.Equal(t, uint64(9), s.LastSeq)
	require.Len(t, s.Active, 3)
	require.JSONEq(t, `{"callId":"c1","status":"open","questions":[{"id":"db","question":"Which?"}],"seq":3}`, string(s.Active[0]))
	require.NotContains(t, string(s.Active[0]), "\n", "calls go out compact")

	empty, open, err := summaryOf("s2", []byte(`{"active":null,"settled":null,"lastSeq":1}`))
	require.NoError(t, err)
	require.Empty(t, open)
	out, _ := json.Marshal(empty)
	require.JSONEq(t, `{"session":"s2","active":[],"settled":0,"lastSeq":1}`, string(out), "a Session with no call left says so with an empty list")

	_, _, err = summaryOf("s3", []byte("not json"))
	require.Error(t, err)
}

// FuzzSummaryOf: whatever the bucket holds, a summary never panics, and
// one that reads goes out as valid JSON.
func FuzzSummaryOf(f *testing.F) {
	f.Add([]byte(`{"active":[{"callId":"c","status":"open","seq":1}],"settled":[],"lastSeq":1}`))
	f.Add([]byte(`{"active":[1,"x",null,{"status":7}]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, _, err := summaryOf("s", data)
		if err != nil {
			return
		}
		out, err := json.Marshal(s)
		require.NoError(t, err)
		require.True(t, json.Valid(out))
	})
}
