package gateway

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/clientwire"
	"github.com/holdover-dev/holdover/strictjson"
)

// FuzzAuthorizeParams holds the gateway's param check to what the backend
// will read (issue 24): whatever it lets through for a token of s1 only
// names s1 to a case-folding decoder too (encoding/json, as a service
// written carelessly would read it), and has no two names that fold
// together. The seeds are the lookalikes of "session": case, U+017F (ſ),
// U+212A (K), fullwidth letters, doubled and escaped keys.
func FuzzAuthorizeParams(f *testing.F) {
	for _, seed := range []string{
		`{"session":"s1","callId":"call_1","answers":[]}`,
		`{"session":"s1","ſession":"s6","callId":"call_1","answers":[]}`,
		`{"session":"s1","Session":"s6"}`,
		`{"SESSION":"s6"}`,
		`{"session":"s1","session":"s6"}`,
		`{"session":"s1","\u0073ession":"s6"}`,
		`{"session":"s1","\u017fession":"s6"}`,
		`{"session":"s1","callId":"a","callＩd":"b","call\u212ad":"c"}`,
		`{"session":"s1","ｓｅｓｓｉｏｎ":"s6"}`,
		`{"session":"s1","nested":{"session":"s6","session":"s7"}}`,
		`{}`,
	} {
		f.Add([]byte(seed))
	}
	c := &conn{grant: Grant{User: "ana", Sessions: []string{"s1"}}}
	f.Fuzz(func(t *testing.T, params []byte) {
		out, sid, err := c.authorizeParams(params)
		if err != nil {
			require.Contains(t, []holdover.Code{holdover.CodeBadRequest, clientwire.CodeForbidden}, holdover.CodeOf(err))
			return
		}
		require.Equal(t, "s1", sid, "only a grant of every Session lets params name none")
		var folding struct {
			Session string `json:"session"`
		}
		require.NoError(t, json.Unmarshal(out, &folding))
		require.Equal(t, "s1", folding.Session, "a folding decoder reads the Session that was checked")
		_, err = strictjson.Members(out)
		require.NoError(t, err, "what is forwarded has exact, distinct names")
	})
}

// The attack of issue 24, item 1, and its relatives: each is refused
// before anything is forwarded.
func TestAuthorizeParamsRefusesLookalikeSessions(t *testing.T) {
	c := &conn{grant: Grant{User: "ana", Sessions: []string{"s1"}}}
	for _, params := range []string{
		`{"session":"s1","ſession":"s6","callId":"call_1","answers":[]}`,
		`{"ſession":"s6"}`,
		`{"Session":"s6"}`,
		`{"session":"s1","session":"s6"}`,
		`{"session":"s1","\u0073ession":"s6"}`,
		`{"session":"s1","callId":"a","callID":"b"}`,
		`{"session":"s1","kind":"a","\u212aind":"b"}`,
	} {
		_, _, err := c.authorizeParams([]byte(params))
		require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err), params)
	}
	out, sid, err := c.authorizeParams([]byte(`{"session":"s1","ｓｅｓｓｉｏｎ":"s6"}`))
	require.NoError(t, err, "fullwidth letters do not fold onto ASCII: a different name, which the service refuses")
	require.Equal(t, "s1", sid)
	require.JSONEq(t, `{"session":"s1","ｓｅｓｓｉｏｎ":"s6"}`, string(out))
}
