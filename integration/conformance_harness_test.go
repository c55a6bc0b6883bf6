package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/answerer"
	"github.com/holdover-dev/holdover/askuser"
	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/liveroot"
	"github.com/holdover-dev/holdover/runtime/runtimetest"
	"github.com/holdover-dev/holdover/sessionlog"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/userquestions"
)

// The conformance suite: one set of scenarios that every agent runtime
// must pass, run through one driver. Each runtime sits behind a runner
// process with the command line of `holdover agent` (--nats, --creds,
// --prompt-creds, --session, --prompt, --pool, --model-url, --model,
// --ask-mode, --release-bound), on the agent role's credentials;
// its model is an OpenAI-compatible Chat Completions server in this test
// process that each scenario scripts, so every runtime is driven the same
// way. The MCP bridge's runner is a host (cmd/mcphost) that runs the model
// loop itself, as Claude Code does, with `holdover mcp` for its tools and
// `holdover hook` at Claude Code's hook points. The rest is the real system: an embedded NATS server with file
// storage and authentication on, as `holdover dev` runs it, the
// question-worker binary as a process on the worker's credentials
// (SIGKILLed by one scenario), Clients answering through answerer and the
// late-answer RPC on a gateway's, and `holdover inspect` and `holdover
// check` after every scenario on an operator's.

// confBound is the release bound of every lease in the suite: the shortest
// the system accepts, so the fault scenarios are quick.
const confBound = userquestions.MinReleaseBound

// confPatience bounds every wait for something that must happen; it only
// turns a hang into a failure.
const confPatience = 30 * time.Second

// confRuntime is one runtime under test: the command that starts its
// runner. A host runtime (the MCP bridge) runs under an agent loop it does
// not own: it records no Turns, names calls with its own ids, and hands
// late answers over at the host's hooks.
type confRuntime struct {
	name    string
	command func(t *testing.T) []string
	host    bool
}

// confRuntimes are the runtimes every scenario runs against.
var confRuntimes = []confRuntime{
	{name: "go", command: func(t *testing.T) []string {
		holdoverBin, _ := shippedBinaries(t)
		return []string{holdoverBin, "agent"}
	}},
	{name: "typescript", command: func(t *testing.T) []string { return []string{"node", tsRunner(t)} }},
	{name: "mcp", host: true, command: func(t *testing.T) []string {
		holdoverBin, _ := shippedBinaries(t)
		return []string{mcpHostBinary(t), "--holdover", holdoverBin}
	}},
}

// mcpHostBinary builds integration/cmd/mcphost, the MCP host behind the
// bridge's runner: `holdover mcp` for its tools, `holdover hook` at
// Claude Code's hook points.
func mcpHostBinary(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "mcphost")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/holdover-dev/holdover/integration/cmd/mcphost").CombinedOutput()
	require.NoError(t, err, "build mcphost:\n%s", out)
	return bin
}

// The TypeScript runner is the SDK's build; it is built once per test
// binary, from the package's installed dependencies.
var tsBuild struct {
	once sync.Once
	dist string
	err  error
}

// tsRunner builds sdk/typescript and returns its conformance runner script.
func tsRunner(t testing.TB) string {
	t.Helper()
	return filepath.Join(tsDist(t), "conformance", "runner.js")
}

// tsDist builds sdk/typescript (tsc) and returns its dist folder. Without
// sdk/typescript/node_modules (`make test-sdk` runs npm ci) the TypeScript
// runtime is skipped on a developer's machine and fails with CI=true.
func tsDist(t testing.TB) string {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	pkg := filepath.Join(filepath.Dir(here), "..", "sdk", "typescript")
	if _, err := os.Stat(filepath.Join(pkg, "node_modules")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("sdk/typescript/node_modules is missing: run npm ci there (make test-sdk)")
		}
		t.Skip("sdk/typescript/node_modules is missing: run `make test-sdk` for the TypeScript runtime's column")
	}
	tsBuild.once.Do(func() {
		cmd := exec.Command("node", filepath.Join(pkg, "node_modules", "typescript", "bin", "tsc"), "-p", pkg)
		if out, err := cmd.CombinedOutput(); err != nil {
			tsBuild.err = fmt.Errorf("build sdk/typescript: %w\n%s", err, out)
		}
		tsBuild.dist = filepath.Join(pkg, "dist")
	})
	require.NoError(t, tsBuild.err)
	return tsBuild.dist
}

// The table: one row per requirement a scenario checks, one column per
// runtime. TestMain prints it after the tests ran.
var confRows = []string{
	"timed ask answered in time (M7)",
	"timed ask pending, the agent continues (M6)",
	"late answer admitted exactly once at the next step (D5, D8)",
	"second answer refused REPLY_QUEUED (D6)",
	"stale instance refused CALLER_NOT_LIVE (M9)",
	"child refused DELEGATED_CALLER (M9)",
	"runtime SIGKILLed mid-wait: the wait ends, a pool member resumes (D7)",
	"interrupted call repaired, the queued reply admitted (D3, D8)",
	"worker SIGKILLed mid-wait: pending within the release bound (W7)",
	confOriginRow,
	confFoldRow,
}

const confOriginRow = "forged discard and resume requests refused, nothing changes (issue 24)"

const confFoldRow = "every scenario: projection = fold of the log, holdover check passes, NATS refused the runtime nothing"

var confTable = struct {
	mu    sync.Mutex
	cells map[[2]string]string
}{cells: map[[2]string]string{}}

// confRecord notes one cell; the fold row is a pass only while every
// scenario's check passed.
func confRecord(rt, row string, pass bool) {
	confTable.mu.Lock()
	defer confTable.mu.Unlock()
	key := [2]string{rt, row}
	switch {
	case !pass:
		confTable.cells[key] = "FAIL"
	case confTable.cells[key] == "":
		confTable.cells[key] = "pass"
	}
}

// confNotApplicable marks rows that do not apply to a runtime: a host
// runtime runs no child agents through Holdover.
func confNotApplicable(rt confRuntime, rows ...string) {
	confTable.mu.Lock()
	defer confTable.mu.Unlock()
	for _, row := range rows {
		confTable.cells[[2]string{rt.name, row}] = "n/a"
	}
}

// confRow runs one row's checks as a subtest and records the outcome.
func confRow(t *testing.T, rt confRuntime, row string, check func(t *testing.T)) bool {
	t.Helper()
	ok := t.Run(row, check)
	confRecord(rt.name, row, ok)
	return ok
}

// printConformanceTable writes the table, when the suite ran, to w.
func printConformanceTable(w io.Writer) {
	confTable.mu.Lock()
	defer confTable.mu.Unlock()
	if len(confTable.cells) == 0 {
		return
	}
	width := 0
	for _, r := range confRows {
		width = max(width, len(r))
	}
	fmt.Fprintf(w, "\nConformance (runtime × scenario):\n%-*s", width+2, "scenario")
	for _, rt := range confRuntimes {
		fmt.Fprintf(w, "  %-10s", rt.name)
	}
	fmt.Fprintln(w)
	for _, r := range confRows {
		fmt.Fprintf(w, "%-*s", width+2, r)
		for _, rt := range confRuntimes {
			cell := confTable.cells[[2]string{rt.name, r}]
			if cell == "" {
				cell = "not run"
			}
			fmt.Fprintf(w, "  %-10s", cell)
		}
		fmt.Fprintln(w)
	}
}

// confWorld is the system one scenario runs on, for one runtime.
type confWorld struct {
	t        *testing.T
	ctx      context.Context
	rt       confRuntime
	env      *embeddedtest.Env
	holdover string
	workerB  string
	worker   *fgProc
	model    *fakeModel
	gateway  *nats.Conn // a gateway's connection, for users' late answers
	roots    *liveroot.Registry
	log      *sessionlog.Log
	sessions []string  // every Session the scenario touched, checked at its end
	runners  []*fgProc // every runner the scenario started, checked at its end
}

// confScenario runs one scenario against every runtime, in parallel.
func confScenario(t *testing.T, scenario func(t *testing.T, w *confWorld)) {
	for _, rt := range confRuntimes {
		t.Run(rt.name, func(t *testing.T) {
			t.Parallel()
			scenario(t, newConfWorld(t, rt))
		})
	}
}

func newConfWorld(t *testing.T, rt confRuntime) *confWorld {
	t.Helper()
	holdoverBin, workerBin := shippedBinaries(t)
	env := embeddedtest.StartSecure(t, streams.Config{}) // the worker's own configuration: file storage
	w := &confWorld{
		t: t, ctx: context.Background(), rt: rt, env: env, holdover: holdoverBin, workerB: workerBin,
		roots: liveroot.New(env.Topology.Roots),
		log:   sessionlog.New(env.JS, env.Topology.Sessions),
	}
	w.model = newFakeModel(t)
	w.worker = w.startWorker()
	w.gateway, _ = env.As(t, auth.Gateway) // a user answers through a gateway
	return w
}

// creds is role r's credentials file, for a process of that role.
func (w *confWorld) creds(r auth.Role) string { return w.env.Auth.Creds(w.env.Tenant, r) }

// startWorker runs a question-worker process and waits until it serves.
func (w *confWorld) startWorker() *fgProc {
	w.t.Helper()
	p := fgSpawn(w.t, "question-worker", exec.Command(w.workerB, "--nats", w.env.Server.ClientURL(),
		"--creds", w.creds(auth.Worker), "--provision=false", "--metrics-addr", "127.0.0.1:0", "--release-bound", confBound.String()))
	require.Eventually(w.t, func() bool {
		_, err := w.env.Conn.Request(userquestions.Subject(userquestions.OpInflight), []byte(`{"session":"ping"}`), time.Second)
		return err == nil
	}, confPatience, 10*time.Millisecond, "the question worker never served")
	return p
}

// runner starts the runtime's runner on the agent's credentials (its
// prompt queued on an admin's: an agent may not write an inbox) with the
// suite's model and timed questions, plus args.
func (w *confWorld) runner(args ...string) *fgProc {
	w.t.Helper()
	cmd := w.rt.command(w.t)
	all := append(cmd[1:], "--nats", w.env.Server.ClientURL(), "--creds", w.creds(auth.Agent), "--prompt-creds", w.creds(auth.Admin), "--model-url", w.model.url, "--model", "conformance",
		"--ask-mode", "timed", "--release-bound", confBound.String())
	p := fgSpawn(w.t, w.rt.name+" runner", exec.Command(cmd[0], append(all, args...)...))
	w.runners = append(w.runners, p)
	return p
}

// session starts a runner serving sid from the prompt "Set up the service.".
func (w *confWorld) session(sid string, args ...string) *fgProc {
	w.t.Helper()
	w.sessions = append(w.sessions, sid)
	return w.runner(append([]string{"--session", sid, "--prompt", "Set up the service."}, args...)...)
}

// joined waits until a runner has joined the resume pool.
func (w *confWorld) joined(p *fgProc) {
	w.t.Helper()
	require.Eventually(w.t, func() bool { return strings.Contains(p.log(), "joined the resume pool") },
		confPatience, 10*time.Millisecond, "the runner never joined the resume pool:\n%s", p.log())
}

// logs reads and awaits Session logs on behalf of t (a row's subtest).
func (w *confWorld) logs(t *testing.T) *runtimetest.Logs {
	return runtimetest.NewLogs(t, w.ctx, w.log, confPatience)
}

// answerFirst makes a Client watching sid settle the first request it sees.
func (w *confWorld) answerFirst(sid string, answers []holdover.Answer) <-chan error {
	w.t.Helper()
	conn, _ := w.env.As(w.t, auth.Gateway)
	return answerFirstOn(w.t, conn, sid, answers)
}

// watch records the requests and cancel notices a Client watching sid gets.
func (w *confWorld) watch(sid string) *fgRecorder {
	w.t.Helper()
	nc, _ := w.env.As(w.t, auth.Gateway)
	a, err := answerer.New(nc, answerer.Config{ReleaseBound: confBound, Log: slog.New(slog.DiscardHandler)})
	require.NoError(w.t, err)
	w.t.Cleanup(func() { require.NoError(w.t, a.Close()) })
	rec := &fgRecorder{requests: make(chan *answerer.Delivery, 10), cancels: make(chan fgCancel, 10)}
	watch, err := a.Watch(w.ctx, sid, rec)
	require.NoError(w.t, err)
	w.t.Cleanup(func() { _ = watch.Close(context.Background()) })
	return rec
}

// confUser is the user the suite's late answers come from, as a gateway
// authenticated them.
const confUser = "ana"

// answer sends a late answer as a gateway does for confUser's Client (D6):
// on the gateway's credentials, naming the user in Holdover-User (issue 10).
func (w *confWorld) answer(sid, callID string, answers []holdover.Answer) (holdover.AnswerResult, error) {
	var out holdover.AnswerResult
	data, err := userquestions.Encode(holdover.AnswerRequest{Session: sid, CallID: callID, Answers: answers})
	if err != nil {
		return out, err
	}
	msg := &nats.Msg{Subject: userquestions.Subject(userquestions.OpAnswer), Data: data, Header: nats.Header{}}
	msg.Header.Set(holdover.UserHeader, confUser)
	ctx, cancel := context.WithTimeout(w.ctx, confPatience)
	defer cancel()
	reply, err := w.gateway.RequestMsgWithContext(ctx, msg)
	if err != nil {
		return out, userquestions.TransportError(ctx, userquestions.OpAnswer, err)
	}
	if err := userquestions.ReplyError(reply); err != nil {
		return out, err
	}
	return out, userquestions.Decode(reply.Data, &out)
}

// finish is the check after every scenario: for each Session it touched,
// `holdover inspect` exits 0 (the projection equals the fold of the log)
// once the projection has caught up, and `holdover check` exits 0 (every
// event fits the schemas), and no runner was refused anything by NATS: a
// runtime on the agent's credentials does only what the role allows
// (auth/roles.go), and both runtimes log a permissions violation.
func (w *confWorld) finish() {
	w.t.Helper()
	confRow(w.t, w.rt, confFoldRow, func(t *testing.T) {
		for _, p := range w.runners {
			require.NotRegexp(t, `(?i)permissions violation`, p.log(), "NATS refused the %s runtime an operation", w.rt.name)
		}
		for _, sid := range w.sessions {
			var code int
			var out string
			require.Eventually(t, func() bool {
				code, out = w.holdoverCmd(t, "inspect", sid)
				return code == 0
			}, confPatience, 50*time.Millisecond, "holdover inspect %s never exited 0:\n%s", sid, out)
			code, out = w.holdoverCmd(t, "check", sid)
			require.Equal(t, 0, code, "holdover check %s:\n%s", sid, out)
		}
	})
}

// holdoverCmd runs an operator command of the shipped binary on sid, on
// an operator's credentials.
func (w *confWorld) holdoverCmd(t *testing.T, cmd, sid string) (int, string) {
	ctx, cancel := context.WithTimeout(w.ctx, confPatience)
	defer cancel()
	out, err := exec.CommandContext(ctx, w.holdover, cmd, "--nats", w.env.Server.ClientURL(), "--creds", w.creds(auth.Operator), sid).CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), string(out)
	}
	require.NoError(t, err, "run holdover %s", cmd)
	return 0, string(out)
}

// The Go tool's own schema and results, which every runtime must record
// byte for byte: what the projection reads (D2) and the model sees.
func goAskTool(t *testing.T) *askuser.Tool {
	t.Helper()
	tool, err := askuser.New(askuser.Config{Mode: askuser.ModeTimed}, pendingService{})
	require.NoError(t, err)
	return tool
}

// goPendingText is the Go tool's pending result for callID (M6).
func goPendingText(t *testing.T, callID string) string {
	t.Helper()
	res := goAskTool(t).Call(context.Background(), askuser.Call{Session: "s", CallID: callID, Agent: &holdover.AgentRef{Instance: "i", Epoch: 1},
		Arguments: json.RawMessage(`{"questions":[{"id":"db","question":"Which database?"}],"timeout":1}`)})
	require.False(t, res.IsError)
	return res.Text
}

// pendingService is a question service whose every timed wait ends
// pending: it makes the Go tool render its pending result.
type pendingService struct{}

func (pendingService) Ask(context.Context, holdover.AskRequest) ([]holdover.Answer, error) {
	return nil, holdover.New(holdover.CodeNoProvider, "not asked")
}

func (pendingService) AskTimed(context.Context, holdover.AskTimedRequest) (holdover.Outcome, error) {
	return holdover.Outcome{Pending: true}, nil
}

// requireGoSchema checks that the runtime offered ask_user_question byte for
// byte as the Go tool does, in every request/header of the log.
func requireGoSchema(t *testing.T, evts []events.Event) {
	t.Helper()
	want := goAskTool(t).Schema()
	headers := 0
	for _, e := range evts {
		h, ok := e.Body.(*events.RequestHeader)
		if !ok {
			continue
		}
		headers++
		var found bool
		for _, tool := range h.Tools {
			if tool.Name == holdover.ToolName {
				found = true
				require.Equal(t, want.Description, tool.Description)
				require.Equal(t, string(want.InputSchema), string(tool.InputSchema), "the same bytes")
			}
		}
		require.True(t, found, "request/header %d offers no %s", e.Seq, holdover.ToolName)
	}
	require.NotZero(t, headers)
}

// fakeModel is a local OpenAI-compatible Chat Completions server: each
// request goes to the scenario's script, which may wait for the driver
// before it answers.
type fakeModel struct {
	url string

	mu       sync.Mutex
	script   func(r *chatRequest) chatReply
	requests []*chatRequest
}

func newFakeModel(t *testing.T) *fakeModel {
	m := &fakeModel{}
	srv := httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(srv.Close)
	m.url = srv.URL + "/v1"
	return m
}

// set makes script answer every request from now on.
func (m *fakeModel) set(script func(r *chatRequest) chatReply) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.script = script
}

// all returns the requests answered or being answered.
func (m *fakeModel) all() []*chatRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*chatRequest(nil), m.requests...)
}

func (m *fakeModel) serve(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil {
		http.Error(w, `{"error":{"message":"not a chat completion request"}}`, http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	m.requests = append(m.requests, &req)
	script := m.script
	m.mu.Unlock()
	if script == nil {
		http.Error(w, `{"error":{"message":"no script"}}`, http.StatusInternalServerError)
		return
	}
	rep := script(&req)
	msg := map[string]any{"role": "assistant", "content": nil}
	if rep.text != "" {
		msg["content"] = rep.text
	}
	var calls []map[string]any
	for _, c := range rep.calls {
		args, _ := json.Marshal(c.args) // maps and strings always encode
		calls = append(calls, map[string]any{"id": c.id, "type": "function", "function": map[string]any{"name": c.name, "arguments": string(args)}})
	}
	if len(calls) > 0 {
		msg["tool_calls"] = calls
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"index": 0, "message": msg}}})
}

// chatRequest is the part of a Chat Completions request the scripts read.
type chatRequest struct {
	Messages []chatMessage `json:"messages"`
	Tools    []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

type chatMessage struct {
	Role       string  `json:"role"`
	Content    *string `json:"content"`
	ToolCallID string  `json:"tool_call_id"`
}

func (m chatMessage) text() string {
	if m.Content == nil {
		return ""
	}
	return *m.Content
}

// result is the text of the tool result for callID, if the conversation has one.
func (r *chatRequest) result(callID string) (string, bool) {
	for _, m := range r.Messages {
		if m.Role == "tool" && m.ToolCallID == callID {
			return m.text(), true
		}
	}
	return "", false
}

// offers reports whether the request offers the tool name.
func (r *chatRequest) offers(name string) bool {
	for _, t := range r.Tools {
		if t.Function.Name == name {
			return true
		}
	}
	return false
}

// replies counts the late answers to callID in the conversation: user
// messages whose text is, or has a line that is (a host hook's context),
// an answer_to_pending_question for it.
func (r *chatRequest) replies(callID string) int {
	n := 0
	for _, m := range r.Messages {
		if m.Role != "user" {
			continue
		}
		for line := range strings.Lines(m.text()) {
			if rep, err := events.ParseReply(strings.TrimSpace(line)); err == nil && rep.CallID == callID {
				n++
			}
		}
	}
	return n
}

// askID is the Session's id of the ask the model made as modelID: the
// model's own for a runtime, and for a host, which names calls itself,
// the callId of the pending result the model read (or modelID when it
// read none).
func (r *chatRequest) askID(modelID string) string {
	res, ok := r.result(modelID)
	if !ok {
		return modelID
	}
	var p holdover.Pending
	if json.Unmarshal([]byte(res), &p) == nil && p.Pending && p.CallID != "" {
		return p.CallID
	}
	return modelID
}

// chatReply is what a script answers: text, tool calls, or both.
type chatReply struct {
	text  string
	calls []chatCall
}

type chatCall struct {
	id, name string
	args     any
}

// askCall asks the suite's question as call id with timeout seconds.
func askCall(id string, timeout int) chatCall {
	return chatCall{id: id, name: holdover.ToolName, args: map[string]any{
		"questions": []map[string]any{{"id": "db", "question": "Which database?", "options": []map[string]string{{"label": "Postgres"}, {"label": "SQLite"}}}},
		"timeout":   timeout,
	}}
}

// gate is a point a script waits at until the driver opens it; arrived
// tells the driver the script got there.
type gate struct {
	arrived chan struct{}
	open    chan struct{}
	once    sync.Once
}

func newGate() *gate { return &gate{arrived: make(chan struct{}, 16), open: make(chan struct{})} }

// pass is called by a script: it signals arrival and waits to be let through.
func (g *gate) pass() {
	g.arrived <- struct{}{}
	select {
	case <-g.open:
	case <-time.After(confPatience):
	}
}

// await waits for the script to arrive at the gate.
func (g *gate) await(t *testing.T, what string) {
	t.Helper()
	select {
	case <-g.arrived:
	case <-time.After(confPatience):
		t.Fatalf("the model was never asked for %s", what)
	}
}

func (g *gate) release() { g.once.Do(func() { close(g.open) }) }

// awaitResult waits until sid's log holds the tool/result of callID and
// returns it with the log.
func (w *confWorld) awaitResult(t *testing.T, sid, callID string) (*events.ToolResult, []events.Event) {
	t.Helper()
	evts := w.logs(t).Await(sid, "the result of "+callID, func(evts []events.Event) bool {
		_, _, ok := toolResult(evts, callID)
		return ok
	})
	res, _, _ := toolResult(evts, callID)
	return res, evts
}

// callID is the Session's id of the ask the model made as modelID: the
// same for a runtime; for a host, which names calls itself, the first
// ask_user_question call in sid's log (every scenario asks once).
func (w *confWorld) callID(t *testing.T, sid, modelID string) string {
	t.Helper()
	if !w.rt.host {
		return modelID
	}
	var id string
	w.logs(t).Await(sid, "the host's ask", func(evts []events.Event) bool {
		for _, e := range evts {
			if c, ok := e.Body.(*events.ToolCall); ok && c.Name == holdover.ToolName {
				id = c.CallID
				return true
			}
		}
		return false
	})
	return id
}

// turnEnded waits until the agent ended its Turn and returns sid's log: a
// runtime records turn/end; a host's model ends its turn in the host,
// which says so once its Stop hook let it.
func (w *confWorld) turnEnded(t *testing.T, sid string) []events.Event {
	t.Helper()
	if !w.rt.host {
		return w.logs(t).AwaitCount(sid, events.TypeTurnEnd, 1)
	}
	require.Eventually(t, func() bool {
		for _, p := range w.runners {
			if strings.Contains(p.log(), "the model ended its turn") {
				return true
			}
		}
		return false
	}, confPatience, 10*time.Millisecond, "the host's model never ended its turn")
	return w.logs(t).Events(sid)
}

// toolResult returns the tool/result of callID, if the log holds one.
func toolResult(evts []events.Event, callID string) (*events.ToolResult, int, bool) {
	for i, e := range evts {
		if r, ok := e.Body.(*events.ToolResult); ok && r.CallID == callID {
			return r, i, true
		}
	}
	return nil, -1, false
}

// admissions returns the indexes of the user/message events that admit
// late replies to callID.
func admissions(evts []events.Event, callID string) []int {
	var out []int
	for i, e := range evts {
		if m, ok := e.Body.(*events.UserMessage); ok && m.Message.Source.IsQuestionReply() && m.Message.Source.CallID == callID {
			out = append(out, i)
		}
	}
	return out
}

// spliced reports whether the log has spliced the inbox message id.
func spliced(evts []events.Event, id string) bool {
	for _, e := range evts {
		if s, ok := e.Body.(*events.InboxSpliced); ok && s.Message.ID == id {
			return true
		}
	}
	return false
}

// claims counts the agent/inbox/claimed events of the inbox message id.
func claims(evts []events.Event, id string) int {
	n := 0
	for _, e := range evts {
		if c, ok := e.Body.(*events.InboxClaimed); ok && c.MessageID == id {
			n++
		}
	}
	return n
}
