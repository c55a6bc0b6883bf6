package wiredoc

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/streams"
)

const doc = "# A doc\n\n" +
	"```wire\n" +
	"SUB echo.>\n" +
	"# a comment\n" +
	"PUB echo.one _INBOX.t.1\n" +
	"Holdover-Prev-Seq: 3\n" +
	"{\n  \"a\": 1,\n  \"b\": [\"x\"]\n}\n" +
	"MSG echo.one <reply>\n" +
	"…\n" +
	"{\"a\": <n>, …}\n" +
	"```\n\n" +
	"````json events/turn-start.json\n{\"turn\":\"t\"}\n````\n"

func TestBlocksAndSteps(t *testing.T) {
	blocks, err := Blocks([]byte(doc))
	require.NoError(t, err)
	require.Len(t, blocks, 2)
	assert.Equal(t, "wire", blocks[0].Info)
	assert.Equal(t, 3, blocks[0].Line)
	assert.Equal(t, "json events/turn-start.json", blocks[1].Info)
	assert.Equal(t, "{\"turn\":\"t\"}\n", blocks[1].Text)

	steps, err := Steps(blocks[0])
	require.NoError(t, err)
	require.Len(t, steps, 3)
	assert.Equal(t, Step{Line: 4, Verb: Sub, Subject: "echo.>"}, steps[0])
	assert.Equal(t, Step{Line: 6, Verb: Pub, Subject: "echo.one", Arg: "_INBOX.t.1",
		Headers: []Header{{"Holdover-Prev-Seq", "3"}}, Body: "{\n  \"a\": 1,\n  \"b\": [\"x\"]\n}"}, steps[1])
	assert.Equal(t, Step{Line: 12, Verb: Msg, Subject: "echo.one", Arg: "<reply>", MoreHeaders: true, Body: "{\"a\": <n>, …}"}, steps[2])
}

func TestStepsRefuseWhatTheyCannotRun(t *testing.T) {
	for _, text := range []string{
		"hello\n",          // no verb
		"SUB a\nName: v\n", // a SUB with headers
		"PUB a\n…\n{}\n",   // a PUB cannot leave headers out
		"UNSUB a\n{}\n",    // an UNSUB with a body
	} {
		_, err := Steps(Block{Info: "wire", Line: 1, Text: text})
		assert.Error(t, err, "%q", text)
	}
	_, err := Blocks([]byte("```wire\nSUB a\n"))
	assert.ErrorContains(t, err, "never closed")
}

func TestPlaceholdersBindOnceAndFill(t *testing.T) {
	v := Vars{}
	require.True(t, v.matchText("lease~worker~<worker>", "lease~worker~abc"))
	assert.Equal(t, "abc", v["worker"])
	assert.False(t, v.matchText("lease~worker~<worker>", "lease~worker~xyz"), "a bound placeholder matches its value only")
	assert.False(t, v.matchText("<a>.<a>", "x.y"), "one name, one value")
	assert.True(t, v.matchText("<a>.<a>", "x.x"))
	filled, err := v.Fill("holdover.q.wait.lease~worker~<worker>.status")
	require.NoError(t, err)
	assert.Equal(t, "holdover.q.wait.lease~worker~abc.status", filled)
	_, err = v.Fill("<nobody>")
	assert.ErrorContains(t, err, "<nobody> not bound")
}

func TestJSONExamplesMatchModuloPlaceholdersAndEllipses(t *testing.T) {
	match := func(want, got string) error {
		t.Helper()
		w, err := exampleJSON(want)
		require.NoError(t, err)
		g, err := decodeJSON([]byte(got))
		require.NoError(t, err)
		return Vars{}.matchJSON(w, g, "")
	}
	assert.NoError(t, match(`{"b":[1,"x"],"a":"<id>"}`, `{"a":"q1","b":[1.0,"x"]}`), "member order and number spelling do not matter")
	assert.NoError(t, match(`{"ms":<ms>,"id":"reply-<r>"}`, `{"ms":59987,"id":"reply-ABC"}`), "a bare placeholder stands for any value")
	assert.NoError(t, match(`{"type":"x", …}`, `{"type":"x","more":true}`), "… allows members not shown")
	assert.NoError(t, match(`{"o":{ … }}`, `{"o":{"any":1}}`))

	err := match(`{"a":1}`, `{"a":1,"b":2}`)
	assert.ErrorContains(t, err, "at /b the example says no such member")
	err = match(`{"a":[1,2]}`, `{"a":[1]}`)
	assert.ErrorContains(t, err, "at /a the example says 2 items")
	err = match(`{"id":"reply-<r>"}`, `{"id":"msg-1"}`)
	assert.ErrorContains(t, err, "at /id")
	err = match(`{"ok":true}`, `{"ok":false}`)
	assert.ErrorContains(t, err, "at /ok the example says true, the message has false")
}

// A transcript runs against a real server, and a message that departs
// from its example fails with the example's line.
func TestRunnerChecksAgainstARealServer(t *testing.T) {
	env := embeddedtest.Start(t, streams.Config{Memory: true})
	run := func(text string) error {
		t.Helper()
		steps, err := Steps(Block{Info: "wire", Line: 10, Text: text})
		require.NoError(t, err)
		r := NewRunner(env.Conn, nil)
		r.Patience = 2 * time.Second
		defer r.Close()
		return r.Run(steps)
	}
	const publish = "SUB _INBOX.t.>\n" +
		"PUB holdover.session.w1.events _INBOX.t.1\n" +
		"Nats-Expected-Last-Subject-Sequence: 0\n" +
		"{\"type\":\"turn/start\",\"at\":\"2026-12-03T10:00:00Z\",\"data\":{\"turn\":\"t1\"}}\n"
	require.NoError(t, run(publish+"MSG _INBOX.t.1\n{\"stream\":\"SESSIONS\",\"seq\":<seq>}\n"+
		"PUB $JS.API.DIRECT.GET.SESSIONS.holdover.session.w1.events _INBOX.t.2\n"+
		"MSG _INBOX.t.2\nNats-Sequence: <seq>\n…\n{\"type\":\"turn/start\", …}\n"))

	err := run(publish + "MSG _INBOX.t.1\n{\"stream\":\"SESSIONS\",\"seq\":1}\n")
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "line 15: MSG _INBOX.t.1: at /seq the example says 1, the message has 0"), err.Error())

	err = run("SUB _INBOX.t.>\nMSG _INBOX.t.9\n{}\n")
	assert.ErrorContains(t, err, "no such message within 2s")

	err = run("SUB _INBOX.t.>\nPUB holdover.session.w1.events _INBOX.t.3\n{\"type\":\"turn/start\",\"at\":\"2026-12-03T10:00:00Z\",\"data\":{\"turn\":\"t1\"}}\nMSG _INBOX.t.3\n{\"stream\":\"SESSIONS\",\"seq\":<s>}\n")
	require.NoError(t, err)
	err = run("SUB _INBOX.t.>\nPUB $JS.API.DIRECT.GET.SESSIONS.holdover.session.w1.events _INBOX.t.4\nMSG _INBOX.t.4\n{\"type\":\"turn/start\", …}\n")
	assert.ErrorContains(t, err, "which the example does not show", "headers the example does not show fail without …")
}

// AS moves the steps below it to another role's connection, for the rest
// of the transcript and the next ones; a MSG takes its message from a
// subscription of any role, and an UNSUB drops its own role's only.
func TestRunnerStepsAsRoles(t *testing.T) {
	env := embeddedtest.Start(t, streams.Config{Memory: true})
	opened := map[string]*nats.Conn{}
	r := NewRunner(env.Conn, func(role string) (*nats.Conn, error) {
		if role == "nobody" {
			return nil, errors.New("no such role")
		}
		nc, _ := embeddedtest.Connect(t, env.Server.ClientURL(), nats.Name(role))
		opened[role] = nc
		return nc, nil
	})
	r.Patience = 2 * time.Second
	t.Cleanup(r.Close)
	steps, err := Steps(Block{Info: "wire", Line: 1, Text: "AS a\nSUB x.>\nAS b\nSUB y.>\nPUB x.1\none\nAS a\nPUB y.1\ntwo\nMSG x.1\none\nMSG y.1\ntwo\n"})
	require.NoError(t, err)
	require.NoError(t, r.Run(steps))
	require.Len(t, opened, 2, "one connection per role, opened once")
	assert.Equal(t, "a", r.role, "the role lasts past the transcript")
	var roles []string
	for _, s := range r.subs {
		roles = append(roles, s.role)
	}
	assert.Equal(t, []string{"a", "b"}, roles, "each SUB is its role's")
	assert.Equal(t, 1, opened["a"].NumSubscriptions(), "a SUB subscribes on its role's connection")
	assert.Equal(t, 1, opened["b"].NumSubscriptions())

	steps, err = Steps(Block{Info: "wire", Line: 20, Text: "AS b\nUNSUB x.>\n"})
	require.NoError(t, err)
	assert.ErrorContains(t, r.Run(steps), "no SUB x.> to drop", "b did not subscribe to x.>")
	steps, err = Steps(Block{Info: "wire", Line: 30, Text: "AS nobody\n"})
	require.NoError(t, err)
	assert.ErrorContains(t, r.Run(steps), "line 31: AS nobody: connect as nobody: no such role")
	_, err = Steps(Block{Info: "wire", Line: 40, Text: "AS a b\n"})
	assert.ErrorContains(t, err, "AS takes a role only")
}
