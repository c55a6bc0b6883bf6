package notify

import (
	"encoding/json"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
)

func mustURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	return u
}

// The JSON body is the notification with every field named as
// docs/operations.md documents it.
func TestJSONBody(t *testing.T) {
	due := t0.Add(30 * time.Second)
	n := Notification{Kind: KindQuestion, Key: "s1.call_1.6.question", Session: "s1", CallID: "call_1", CallSeq: 6,
		Questions: []holdover.Question{{ID: "db", Question: "Which database?", Options: []holdover.Option{{Label: "Postgres"}}}},
		Deadline:  &due, Blocking: false, ParentCallID: "code_1", Seq: 6, At: t0, Link: "http://127.0.0.1:8080/?session=s1&token=t#/s/s1"}
	data, err := body(n, FormatJSON)
	require.NoError(t, err)
	require.Contains(t, string(data), `"link":"http://127.0.0.1:8080/?session=s1&token=t#/s/s1"}`, "no HTML escaping, no trailing newline")
	require.JSONEq(t, `{"kind":"question","key":"s1.call_1.6.question","session":"s1","callId":"call_1","callSeq":6,
		"questions":[{"id":"db","question":"Which database?","options":[{"label":"Postgres"}]}],
		"deadline":"2026-12-02T16:00:30Z","parentCallId":"code_1","seq":6,"at":"2026-12-02T16:00:00Z",
		"link":"http://127.0.0.1:8080/?session=s1&token=t#/s/s1"}`, string(data))
}

// The Slack body is {"text": …}: what happened, the deadline, every
// question on its own line with Slack's markup characters escaped, and
// the card link.
func TestSlackBody(t *testing.T) {
	due := time.Date(2026, 12, 2, 16, 0, 30, 0, time.UTC)
	n := Notification{Kind: KindQuestion, Session: "s1", CallID: "call_1", Deadline: &due,
		Questions: []holdover.Question{{ID: "db", Question: "Which <b>database</b> & why? <!channel>"}, {ID: "region"}},
		Link:      "http://127.0.0.1:8080/?session=s1#/s/s1"}
	data, err := body(n, FormatSlack)
	require.NoError(t, err)
	var got map[string]string
	require.NoError(t, json.Unmarshal(data, &got))
	require.Equal(t, map[string]string{"text": "*New question* in Session `s1`, answer by 16:00:30 UTC\n" +
		"• Which &lt;b&gt;database&lt;/b&gt; &amp; why? &lt;!channel&gt;\n• region\n" +
		"<http://127.0.0.1:8080/?session=s1#/s/s1|Open the card>"}, got)

	n.Kind, n.Deadline, n.Link = KindPending, nil, ""
	data, err = body(n, FormatSlack)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &got))
	require.Equal(t, "*Question went pending* in Session `s1`: the agent went on without the answer, which it still takes\n"+
		"• Which &lt;b&gt;database&lt;/b&gt; &amp; why? &lt;!channel&gt;\n• region", got["text"])

	n.Kind, n.Blocking = KindQuestion, true
	data, err = body(n, FormatSlack)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &got))
	require.Contains(t, got["text"], "*New question* in Session `s1`, the agent waits for the answer\n")
}

// Only absolute http and https URLs are webhooks, and what an error
// says of one stops at its host: an incoming webhook's path is its secret.
func TestParseWebhook(t *testing.T) {
	h, err := ParseWebhook("https://hooks.example/services/T0/B0/secret", FormatSlack)
	require.NoError(t, err)
	require.Equal(t, "https://hooks.example", redacted(h.URL))
	for _, bad := range []string{"hooks.example/secret", "ftp://hooks.example/secret", "https:///secret", "http://[::1/secret"} {
		_, err := ParseWebhook(bad, FormatJSON)
		require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err), bad)
		require.NotContains(t, err.Error(), "secret", bad)
	}
	_, err = ParseWebhook("https://hooks.example/x", "xml")
	require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err))
	u, err := ParseWebURL("")
	require.NoError(t, err)
	require.Nil(t, u)
	require.Equal(t, "", cardLink(nil, "s1"), "no web URL, no link")
}
