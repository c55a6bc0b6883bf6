package integration

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
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
	"github.com/holdover-dev/holdover/liveroot"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/runtime/runtimetest"
	"github.com/holdover-dev/holdover/sessionlog"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/userquestions"
)

// The restart tests run the shipped binaries as separate processes, the
// way an operator does: question-worker, `holdover agent` (SIGKILLed and
// started again), and `holdover inspect`. Only the NATS server runs in the
// test process.

// restartPatience bounds every wait for something that must happen; it
// only turns a hang into a failure.
const restartPatience = 20 * time.Second

// shipped is the build of the shipped binaries that the tests of one test
// binary run share: building them once keeps the package's tests quick.
var shipped struct {
	once     sync.Once
	dir      string
	holdover string
	worker   string
	err      error
}

// TestMain prints the conformance table when the suite ran, and removes
// the shared build once every test has run.
func TestMain(m *testing.M) {
	code := m.Run()
	printConformanceTable(os.Stdout)
	if shipped.dir != "" {
		_ = os.RemoveAll(shipped.dir)
	}
	os.Exit(code)
}

// shippedBinaries builds holdover and question-worker on first use, with
// the race detector when this test binary has it, so a race in a process
// shows in its log.
func shippedBinaries(t *testing.T) (holdoverBin, workerBin string) {
	t.Helper()
	shipped.once.Do(func() {
		if shipped.dir, shipped.err = os.MkdirTemp("", "holdover-bins-"); shipped.err != nil {
			return
		}
		args := []string{"build"}
		if raceBuild {
			args = append(args, "-race")
		}
		args = append(args, "-o", shipped.dir+string(filepath.Separator),
			"github.com/holdover-dev/holdover/cmd/holdover", "github.com/holdover-dev/holdover/cmd/question-worker")
		if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			shipped.err = errors.New("go " + err.Error() + ":\n" + string(out))
		}
		shipped.holdover = filepath.Join(shipped.dir, "holdover")
		shipped.worker = filepath.Join(shipped.dir, "question-worker")
	})
	require.NoError(t, shipped.err, "build the shipped binaries")
	return shipped.holdover, shipped.worker
}

// restartWorld is a real NATS server with file storage and authentication
// in this process, a question-worker process, and agent processes the
// test starts and kills, each on its own role's credentials. The test's
// own reads are an admin's.
type restartWorld struct {
	*runtimetest.Logs // reads and awaits the Session log
	t                 *testing.T
	ctx               context.Context
	env               *embeddedtest.Env
	holdover          string
	script            string // the scripted model's file
	worker            *fgProc
	store             *projection.Store
	roots             *liveroot.Registry
	user              *answerer.Client
}

// restartSession is the Session every restart test runs.
const restartSession = "s1"

func newRestartWorld(t *testing.T, script string) *restartWorld {
	t.Helper()
	holdoverBin, workerBin := shippedBinaries(t)
	env := embeddedtest.StartSecure(t, streams.Config{}) // the worker's own configuration: file storage
	ctx := context.Background()
	w := &restartWorld{
		t: t, ctx: ctx, env: env, holdover: holdoverBin,
		script: filepath.Join(t.TempDir(), "agent.script"),
		Logs:   runtimetest.NewLogs(t, ctx, sessionlog.New(env.JS, env.Topology.Sessions), restartPatience),
		store:  projection.NewStore(env.JS, env.Topology.Sessions, env.Topology.Questions),
		roots:  liveroot.New(env.Topology.Roots),
	}
	require.NoError(t, os.WriteFile(w.script, []byte(script), 0o600))
	w.worker = w.spawn("question-worker", workerBin, "--nats", env.Server.ClientURL(), "--creds", w.creds(auth.Worker), "--provision=false",
		"--metrics-addr", "127.0.0.1:0", "--release-bound", userquestions.MinReleaseBound.String())
	// The worker serves once the service answers a ping; it uses the
	// topology the test's admin provisioned.
	ping, err := micro.ControlSubject(micro.PingVerb, userquestions.Name, "")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := env.Conn.Request(ping, nil, time.Second)
		return err == nil
	}, restartPatience, 10*time.Millisecond, "the question worker never served (its log follows)")

	userConn, _ := env.As(t, auth.Gateway) // a user answers through a gateway
	w.user = newUser(t, userConn, restartPatience)
	return w
}

// creds is role r's credentials file.
func (w *restartWorld) creds(r auth.Role) string { return w.env.Auth.Creds(w.env.Tenant, r) }

// spawn starts a process that is killed when the test ends; whatever
// happened to it, its log must show no data race.
func (w *restartWorld) spawn(name, bin string, args ...string) *fgProc {
	w.t.Helper()
	p := fgSpawn(w.t, name, exec.Command(bin, args...))
	w.t.Cleanup(func() {
		p.kill()
		assert.NotContains(w.t, p.log(), "DATA RACE", "%s raced", name)
	})
	return p
}

// agent starts `holdover agent` with the scripted model and the timed
// ask_user_question, plus args.
func (w *restartWorld) agent(args ...string) *fgProc {
	w.t.Helper()
	return w.spawn("holdover agent", w.holdover, append([]string{"agent", "--nats", w.env.Server.ClientURL(),
		"--creds", w.creds(auth.Agent), "--prompt-creds", w.creds(auth.Admin), "--script", w.script, "--ask-mode", "timed", "--log-level", "debug"}, args...)...)
}

// stop asks a process to stop as Ctrl-C or an orchestrator does and
// requires a clean exit: 0, and no race report (the race detector exits 66).
func (w *restartWorld) stop(p *fgProc) {
	w.t.Helper()
	require.NoError(w.t, p.cmd.Process.Signal(syscall.SIGTERM))
	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()
	select {
	case err := <-exited:
		require.NoError(w.t, err, "the process stops cleanly on SIGTERM:\n%s", p.log())
	case <-time.After(restartPatience):
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-exited
		w.t.Fatalf("the process did not stop within %v of SIGTERM:\n%s", restartPatience, p.log())
	}
}

// inspect runs `holdover inspect` and returns its exit code and output.
func (w *restartWorld) inspect() (int, string) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(w.ctx, restartPatience)
	defer cancel()
	out, err := exec.CommandContext(ctx, w.holdover, "inspect", "--nats", w.env.Server.ClientURL(), "--creds", w.creds(auth.Operator), restartSession).CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), string(out)
	}
	require.NoError(w.t, err, "run holdover inspect")
	return 0, string(out)
}

// awaitView polls the stored projection (the userQuestions bucket) until
// done holds and returns it.
func (w *restartWorld) awaitView(what string, done func(projection.View) bool) projection.View {
	w.t.Helper()
	var view projection.View
	require.EventuallyWithT(w.t, func(c *assert.CollectT) {
		got, found, err := w.store.Get(w.ctx, restartSession)
		require.NoError(c, err)
		require.True(c, found, "no projection yet")
		require.True(c, done(got), "waiting for %s; the projection is %+v", what, got)
		view = got
	}, restartPatience, 10*time.Millisecond)
	return view
}

// liveRoot returns the registry's record of the Session.
func (w *restartWorld) liveRoot() liveroot.Record {
	w.t.Helper()
	rec, _, err := w.roots.Lookup(w.ctx, restartSession)
	require.NoError(w.t, err)
	return rec
}

// callIs reports whether the projection holds active call id with status.
func callIs(id string, status projection.Status) func(projection.View) bool {
	return func(v projection.View) bool {
		c, ok := v.Find(id)
		return ok && c.Status == status
	}
}

// repairedResult returns the synthetic TOOL_OUTCOME_UNKNOWN result of call
// id, if the log holds one.
func repairedResult(evts []events.Event, id string) (*events.ToolResult, bool) {
	for _, e := range evts {
		if r, ok := e.Body.(*events.ToolResult); ok && r.CallID == id && r.Error != nil && r.Error.Code == holdover.CodeToolOutcomeUnknown {
			return r, true
		}
	}
	return nil, false
}
