package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/embedded"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/projection/projectiontest"
	"github.com/holdover-dev/holdover/sessionlog"
	"github.com/holdover-dev/holdover/streams"
)

// devServer is a running `holdover dev`: its NATS URL, its data folder,
// which holds every role's credentials, and what it printed at start.
type devServer struct {
	url, data, banner string
}

// creds is role r's credentials file, which dev wrote in its data folder.
func (d devServer) creds(r auth.Role) string {
	return filepath.Join(d.data, "auth", "tenants", auth.DefaultTenant, string(r)+".creds")
}

// as connects to dev's NATS with role r's credentials.
func (d devServer) as(t *testing.T, r auth.Role) jetstream.JetStream {
	opts, err := ops.NATSConfig{Creds: d.creds(r)}.Options()
	require.NoError(t, err)
	_, js := embeddedtest.Connect(t, d.url, opts...)
	return js
}

// startDev runs `holdover dev` on free ports until the test ends.
func startDev(t testing.TB, extra ...string) devServer {
	ctx, cancel := context.WithCancel(context.Background())
	data := t.TempDir()
	out, w := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"dev", "--data", data, "--nats-port", "0", "--metrics-addr", "127.0.0.1:0", "--listen", "127.0.0.1:0"}, extra...), w, &stderr)
		w.Close()
	}()
	t.Cleanup(func() {
		cancel()
		assert.Equal(t, 0, <-done, "dev stops cleanly on its context (Ctrl-C)")
		assert.Contains(t, stderr.String(), "msg=stopped component=projection")
	})
	dev := devServer{data: data}
	var banner strings.Builder
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		line := lines.Text()
		banner.WriteString(line + "\n")
		if url, ok := strings.CutPrefix(strings.TrimSpace(line), "NATS     "); ok {
			dev.url = strings.Fields(url)[0]
		}
		if line == "Ctrl-C stops." && dev.url != "" {
			go func() { _, _ = io.Copy(io.Discard, out) }()
			dev.banner = banner.String()
			return dev
		}
	}
	t.Fatalf("dev printed no NATS URL; stdout:\n%s\nstderr:\n%s", banner.String(), stderr.String())
	return devServer{}
}

// devTopology connects to a running dev server as its admin (the test
// writes events and values as it likes) and opens the SESSIONS stream and
// the userQuestions bucket.
func devTopology(t *testing.T, dev devServer) (jetstream.JetStream, jetstream.Stream, jetstream.KeyValue) {
	t.Helper()
	js := dev.as(t, auth.Admin)
	ctx := context.Background()
	sessions, err := js.Stream(ctx, streams.SessionsStream)
	require.NoError(t, err)
	kv, err := js.KeyValue(ctx, streams.QuestionsBucket)
	require.NoError(t, err)
	return js, sessions, kv
}

func cli(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(context.Background(), args, &o, &e)
	return code, o.String(), e.String()
}

// holdover dev folds Session events; inspect checks them, reports a
// tampered value with exit 1, and rebuild repairs it. Authentication is on:
// each step uses the credentials of the role that may take it.
func TestDevInspectRebuild(t *testing.T) {
	dev := startDev(t, "--no-demo")
	url := dev.url
	js, sessions, kv := devTopology(t, dev)
	ctx := context.Background()
	var err error

	log := sessionlog.New(js, sessions)
	args, _ := json.Marshal(holdover.ToolArgs{Questions: []holdover.Question{{ID: "q", Question: "Ship it?"}}, Timeout: new(int64(30))})
	header := &events.RequestHeader{Tools: []events.ToolSchema{{Name: holdover.ToolName, InputSchema: json.RawMessage(`{"type":"object","properties":{"questions":{},"timeout":{"type":"integer"}}}`)}}}
	var last uint64
	for _, b := range []events.Body{header, &events.ToolCall{CallID: "c1", Name: holdover.ToolName, Arguments: args}} {
		last, err = log.Append(ctx, "inspected", last, events.New(time.Now(), b))
		require.NoError(t, err)
	}
	projectiontest.Folded(t, kv, "inspected", last)

	code, _, stderr := cli(t, "inspect", "--nats", url, "inspected")
	require.Equal(t, 1, code, "dev's NATS admits no one without credentials")
	assert.Contains(t, stderr, "Authorization Violation")
	operator := dev.creds(auth.Operator)
	code, stdout, stderr := cli(t, "inspect", "--nats", url, "--creds", operator, "inspected")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "ok: the projection equals the fold")
	var v projection.View
	require.NoError(t, json.Unmarshal([]byte(stdout), &v))
	assert.Equal(t, "c1", v.Active[0].CallID)

	v.Active[0].Status = projection.Continued
	tampered, _ := json.Marshal(v)
	_, err = kv.Put(ctx, "inspected", tampered)
	require.NoError(t, err)
	code, _, stderr = cli(t, "inspect", "--nats", url, "--creds", operator, "inspected")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "differs from the fold of its log")
	assert.Contains(t, stderr, `stored: "status": "continued",`)
	assert.Contains(t, stderr, `folded: "status": "open",`)

	code, stdout, _ = cli(t, "rebuild", "--nats", url, "--creds", dev.creds(auth.Admin))
	assert.Equal(t, 0, code)
	assert.Equal(t, "refolded 1 sessions (2 events); repaired 1 projections\n", stdout)
	code, _, _ = cli(t, "inspect", "--nats", url, "--creds", operator, "inspected")
	assert.Equal(t, 0, code)
}

// Issue 8: check lists every problem of a Session's log and exits 1;
// inspect shows the events the fold rejected next to the View.
func TestCheckAndInspectShowWhatTheFoldRejects(t *testing.T) {
	dev := startDev(t, "--no-demo")
	url, operator := dev.url, dev.creds(auth.Operator)
	js, sessions, kv := devTopology(t, dev)
	ctx := context.Background()
	var err error

	// A runtime that declared its tool the way its model API does.
	var last uint64
	for _, raw := range []string{
		`{"type":"request/header","at":"2026-12-03T10:00:00Z","data":{"tools":[{"name":"ask_user_question","parameters":{"type":"object","properties":{"timeout":{"type":"integer"}}}}]}}`,
		`{"type":"tool/call","at":"2026-12-03T10:00:01Z","data":{"callId":"c1","name":"ask_user_question","arguments":{"questions":[{"id":"q","question":"Ship it?"}],"timeout":30}}}`,
		`{"type":"user/message","at":"2026-12-03T10:00:02Z","data":{"message":{"id":"m1","role":"user","content":[{"type":"text","text":"hi"}]}}}`,
	} {
		msg := nats.NewMsg("holdover.session.raw.events")
		msg.Data = []byte(raw)
		msg.Header.Set(sessionlog.PrevHeader, strconv.FormatUint(last, 10))
		ack, err := js.PublishMsg(ctx, msg, jetstream.WithExpectLastSequencePerSubject(last))
		require.NoError(t, err)
		last = ack.Sequence
	}
	projectiontest.Folded(t, kv, "raw", last)

	code, stdout, stderr := cli(t, "check", "--nats", url, "--creds", operator, "raw")
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, stdout, `request/header: the question fold passes over it (tool_schema_key): tool 1 declares ask_user_question with its input schema under "parameters"`)
	assert.Contains(t, stdout, `request/header: /data/tools/0: additional properties 'parameters' not allowed`)
	assert.Contains(t, stdout, `user/message: the question fold passes over it (invalid_body): message has no source`)
	assert.Contains(t, stdout, `user/message: /data/message: missing property 'source'`)
	assert.NotContains(t, stdout, "tool/call", "the call itself is well formed")
	assert.Contains(t, stderr, "2 of session raw's 3 events have problems")

	code, stdout, stderr = cli(t, "inspect", "--nats", url, "--creds", operator, "raw")
	assert.Equal(t, 0, code, "the projection is right: the fold of a log with rejected events")
	assert.Contains(t, stdout, `"timed": false`)
	assert.Contains(t, stderr, "(tool_schema_key)")
	assert.Contains(t, stderr, "2 events of session raw were rejected; `holdover check raw` lists every problem of its log")

	// What Holdover's own writer records fits its schemas.
	log := sessionlog.New(js, sessions)
	_, err = log.Append(ctx, "written", 0, events.New(time.Now(), &events.TurnStart{Turn: "t"}))
	require.NoError(t, err)
	code, stdout, stderr = cli(t, "check", "--nats", url, "--creds", operator, "written")
	assert.Equal(t, 0, code, stderr)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "ok: all 1 events of session written fit the schemas")

	code, _, stderr = cli(t, "check", "--nats", url, "--creds", operator, "nobody")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "session nobody has no events")
	code, _, stderr = cli(t, "check", "--nats", url, "--creds", operator, "a.b")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, `session id "a.b" may hold only`)
}

func TestCommandLineErrors(t *testing.T) {
	code, _, stderr := cli(t)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "usage: holdover <command>")
	code, _, stderr = cli(t, "frobnicate")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `unknown command "frobnicate"`)
	code, _, stderr = cli(t, "inspect")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "inspect takes one Session id")
	code, _, _ = cli(t, "rebuild", "--no-such-flag")
	assert.Equal(t, 2, code)
	code, _, _ = cli(t, "dev", "-h")
	assert.Equal(t, 0, code)

	env := embeddedtest.Start(t, streams.Config{Memory: true})
	code, _, stderr = cli(t, "inspect", "--nats", env.Server.ClientURL(), "a.b")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, `session id "a.b" may hold only`)
	code, _, stderr = cli(t, "inspect", "--nats", env.Server.ClientURL(), "nobody")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "has no events and no projection")
}

// holdover dev runs the demo agent: its timed question opens in the
// userQuestions projection of Session demo, with its original questions.
func TestDevRunsTheDemoAgent(t *testing.T) {
	dev := startDev(t)
	url, operator := dev.url, dev.creds(auth.Operator)
	// A watch is a consumer, which the operator may not create: the test
	// watches as admin, and checks as the operator.
	kv, err := dev.as(t, auth.Admin).KeyValue(context.Background(), streams.QuestionsBucket)
	require.NoError(t, err)
	_, v := projectiontest.Await(t, kv, demoSession, 30*time.Second, func(v projection.View) bool { return len(v.Active) > 0 },
		"the demo agent's question never opened")
	require.True(t, v.Timed, "the demo offers the timed schema (D2)")
	qs := v.Active[0].Questions
	require.Len(t, qs, 2)
	require.Equal(t, "db", qs[0].ID)
	require.Equal(t, "PostgreSQL (Recommended)", qs[0].Options[0].Label)

	// Everything the Go runtime recorded fits the protocol's schemas.
	code, stdout, stderr := cli(t, "check", "--nats", url, "--creds", operator, demoSession)
	assert.Equal(t, 0, code, "%s%s", stdout, stderr)
}

// holdover auth init writes every role's credentials for each tenant and
// the server fragment; holdover provision provisions with admin's, and the
// other roles find that topology (issue 10).
func TestAuthInitAndProvision(t *testing.T) {
	dir := t.TempDir()
	code, stdout, stderr := cli(t, "auth", "init", "--dir", dir, "acme")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "include "+filepath.Join(dir, auth.ServerConfigFile))
	assert.Contains(t, stdout, "tenant acme (account A")
	setup, err := auth.Init(dir)
	require.NoError(t, err)
	require.Equal(t, []string{"acme", auth.DefaultTenant}, setup.Tenants())

	code, _, stderr = cli(t, "auth", "frobnicate")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "usage: holdover auth init")

	srv, err := embedded.Start(embedded.Options{StoreDir: t.TempDir(), Auth: setup})
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	code, _, stderr = cli(t, "provision", "--nats", srv.ClientURL(), "--creds", setup.Creds("acme", auth.Admin), "--memory", "--durable", "a.b")
	assert.Equal(t, 2, code, "a durable name that would not survive the metadata list")
	assert.Contains(t, stderr, `durable "a.b"`)
	code, stdout, stderr = cli(t, "provision", "--nats", srv.ClientURL(), "--creds", setup.Creds("acme", auth.Admin), "--memory", "--durable", "replay", "--max-consumers", "100")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "provisioned SESSIONS, CLAIMS and")

	code, stdout, stderr = cli(t, "auth", "restore-creds", "--dir", dir, "--for", "5m", "acme")
	require.Equal(t, 0, code, stderr)
	restore := filepath.Join(dir, "tenants", "acme", "restore.creds")
	assert.Contains(t, stdout, restore)
	_, restoreJS := embeddedtest.Connect(t, srv.ClientURL(), nats.UserCredentials(restore))
	sessions, err := restoreJS.Stream(context.Background(), streams.SessionsStream)
	require.NoError(t, err, "the restore credentials see the tenant's streams")
	cfg := sessions.CachedInfo().Config
	assert.Equal(t, 100, cfg.MaxConsumers)
	assert.True(t, streams.KeptDurables(cfg)["replay"], "the declared durable")
	opts, err := ops.NATSConfig{Creds: setup.Creds("acme", auth.Operator)}.Options()
	require.NoError(t, err)
	_, js := embeddedtest.Connect(t, srv.ClientURL(), opts...)
	_, err = streams.Open(context.Background(), js)
	require.NoError(t, err, "the operator finds the topology admin provisioned")
}
