package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"go/parser"
	"go/token"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/micro"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/answerer"
	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/projection/projectiontest"
	"github.com/holdover-dev/holdover/sessionlog"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/userquestions"
)

// rawRuntimeDir is the runtime written from docs/agent-protocol.md and
// schemas/ alone.
const rawRuntimeDir = "cmd/rawruntime"

// The runtime written from the schemas alone imports no Holdover package:
// only the standard library, nats.go and a JSON Schema validator. It is
// built with the module, so it keeps compiling, but what it knows of
// Holdover it knows from the document and the schema files.
func TestRawRuntimeImportsNoHoldoverPackage(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(rawRuntimeDir, "*.go"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	allowed := regexp.MustCompile(`^(github\.com/nats-io/nats\.go(/jetstream)?|github\.com/santhosh-tekuri/jsonschema/v6|[a-z]+(/[a-z]+)*)$`)
	for _, file := range files {
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ImportsOnly)
		require.NoError(t, err)
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			assert.NotContains(t, path, "holdover", "%s imports %s", file, path)
			assert.Regexp(t, allowed, path, "%s imports %s: the standard library, nats.go and the schema validator only", file, path)
		}
	}
}

// Issue 8, "Show": a minimal runtime built from the schemas alone, as its
// own process against a real system (the shipped question-worker process
// and a Client answering), runs a timed question answered in time, one
// that goes pending and is answered late (admitted once), and records a
// malformed request/header, which the worker rejects loudly: counted in
// holdover_events_rejected_total and named by `holdover check`.
func TestARuntimeFromTheSchemasAlone(t *testing.T) {
	holdoverBin, workerBin := shippedBinaries(t)
	// Authentication on, as holdover dev runs it: each process on its
	// role's credentials (docs/agent-protocol.md §0), the runtime on the
	// agent's.
	env := embeddedtest.StartSecure(t, streams.Config{}) // the worker's own configuration: file storage
	creds := func(r auth.Role) string { return env.Auth.Creds(env.Tenant, r) }
	ctx := context.Background()
	url := env.Server.ClientURL()
	worker := fgSpawn(t, "question-worker", exec.Command(workerBin, "--nats", url, "--creds", creds(auth.Worker), "--provision=false",
		"--metrics-addr", "127.0.0.1:0", "--release-bound", userquestions.MinReleaseBound.String()))
	ping, err := micro.ControlSubject(micro.PingVerb, userquestions.Name, "")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := env.Conn.Request(ping, nil, time.Second)
		return err == nil
	}, fgPatience, 10*time.Millisecond, "the question worker never served")
	metrics := metricsAddr(t, worker)

	// The Client: answers call_1 at once, leaves call_2 to go pending.
	clientConn, _ := env.As(t, auth.Gateway)
	client, err := answerer.New(clientConn, answerer.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, client.Close()) })
	inTime := []holdover.Answer{{ID: "db", Selected: []string{"SQLite"}}}
	seen := &fgRecorder{requests: make(chan *answerer.Delivery, 10), cancels: make(chan fgCancel, 10)}
	watch, err := client.Watch(ctx, "s1", seen)
	require.NoError(t, err)
	t.Cleanup(func() { _ = watch.Close(context.Background()) })

	bin := filepath.Join(t.TempDir(), "rawruntime")
	out, err := exec.Command("go", "build", "-o", bin, "./"+rawRuntimeDir).CombinedOutput()
	require.NoError(t, err, "build rawruntime:\n%s", out)
	schemasDir, err := filepath.Abs(filepath.Join("..", "schemas"))
	require.NoError(t, err)
	cmd := exec.Command(bin, "--nats", url, "--creds", creds(auth.Agent), "--schemas", schemasDir, "--session", "s1", "--instance", "raw-1",
		"--pending-timeout", "1", "--malformed-session", "s2")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	runtime := fgSpawn(t, "rawruntime", cmd)
	said := milestones(stdout)
	next := func(event string) map[string]any {
		t.Helper()
		select {
		case m, ok := <-said:
			require.True(t, ok, "rawruntime stopped before %q:\n%s", event, runtime.log())
			require.Equal(t, event, m["event"], "rawruntime said %v", m)
			return m
		case <-time.After(fgPatience):
			t.Fatalf("rawruntime did not say %q:\n%s", event, runtime.log())
			return nil
		}
	}

	next("ready")
	d := seen.next(t)
	require.Equal(t, "call_1", d.CallID)
	require.NoError(t, d.Settle(inTime))
	answered := next("answered")
	assert.JSONEq(t, `[{"id":"db","selected":["SQLite"]}]`, jsonOf(t, answered["answers"]), "the answer in time reached the runtime")

	d = seen.next(t)
	require.Equal(t, "call_2", d.CallID, "the second question reaches the Client, which leaves it")
	next("pending")

	gatewayConn, _ := env.As(t, auth.Gateway)
	user := newUser(t, gatewayConn, fgPatience)
	late := []holdover.Answer{{ID: "region", Selected: []string{"eu"}}}
	res, err := user.Answer(ctx, holdover.AnswerRequest{Session: "s1", CallID: "call_2", Answers: late})
	require.NoError(t, err)
	require.True(t, res.Accepted, "call_2 is continued: the late answer is taken")
	admitted := next("admitted")
	assert.Equal(t, res.MessageID, admitted["messageId"], "the runtime admitted the reply it was sent")

	view, err := user.View(ctx, "s1")
	require.NoError(t, err)
	require.Empty(t, view.Active)
	require.Len(t, view.Settled, 2)
	assert.Equal(t, projection.Settled{CallID: "call_1", Questions: view.Settled[0].Questions, Answers: inTime, Seq: view.Settled[0].Seq}, view.Settled[0])
	assert.Equal(t, "call_2", view.Settled[1].CallID)
	assert.True(t, view.Settled[1].Late, "the late answer settled call_2")
	assert.Equal(t, late, view.Settled[1].Answers)
	again, err := user.Answer(ctx, holdover.AnswerRequest{Session: "s1", CallID: "call_2", Answers: late})
	require.NoError(t, err)
	assert.False(t, again.Accepted, "a settled call takes no second answer")

	malformed := next("malformed")
	assert.Contains(t, jsonOf(t, malformed["problems"]), "parameters", "the runtime's own schema check saw the header break event.json")
	next("done")
	require.NoError(t, runtime.cmd.Wait(), "rawruntime exits cleanly:\n%s", runtime.log())

	// The late answer was admitted once: one user/message carries it.
	evts, bad, err := sessionlog.New(env.JS, env.Topology.Sessions).Read(ctx, "s1", 0)
	require.NoError(t, err)
	require.Empty(t, bad)
	admissions := 0
	for _, e := range evts {
		if m, ok := e.Body.(*events.UserMessage); ok && m.Message.Source.IsQuestionReply() && m.Message.Source.CallID == "call_2" {
			admissions++
		}
	}
	assert.Equal(t, 1, admissions, "the late reply is admitted exactly once")

	// The malformed header is rejected loudly: counted by the worker, and
	// named by holdover check, which exits 1.
	projectiontest.Folded(t, env.Topology.Questions, "s2", 1)
	assert.Equal(t, 1.0, scrape(t, metrics, `holdover_events_rejected_total{reason="tool_schema_key",type="request/header"}`))
	check := exec.Command(holdoverBin, "check", "--nats", url, "--creds", creds(auth.Operator), "s2")
	said2, err := check.CombinedOutput()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "holdover check fails on s2: %v\n%s", err, said2)
	assert.Equal(t, 1, exit.ExitCode())
	assert.Contains(t, string(said2), `request/header: the question fold passes over it (tool_schema_key): tool 1 declares ask_user_question with its input schema under "parameters"`)
	assert.Contains(t, worker.log(), "reason=tool_schema_key", "the worker logged the rejection")
}

// milestones reads the JSON lines rawruntime prints.
func milestones(r io.Reader) <-chan map[string]any {
	out := make(chan map[string]any, 16)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				out <- m
			}
		}
	}()
	return out
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	return string(data)
}

var servingMetrics = regexp.MustCompile(`msg=serving component=metrics addr=(\S+)`)

// metricsAddr waits for the process to log where it serves /metrics.
func metricsAddr(t *testing.T, p *fgProc) string {
	t.Helper()
	var addr string
	require.Eventually(t, func() bool {
		m := servingMetrics.FindStringSubmatch(p.log())
		if m != nil {
			addr = m[1]
		}
		return m != nil
	}, fgPatience, 10*time.Millisecond, "the process never said where it serves metrics:\n%s", p.log())
	return addr
}

// scrape reads one sample of the Prometheus text the process serves.
func scrape(t *testing.T, addr, sample string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	for _, line := range strings.Split(string(body), "\n") {
		if value, ok := strings.CutPrefix(line, sample+" "); ok {
			v, err := strconv.ParseFloat(value, 64)
			require.NoError(t, err)
			return v
		}
	}
	t.Fatalf("no sample %s in /metrics", sample)
	return 0
}
