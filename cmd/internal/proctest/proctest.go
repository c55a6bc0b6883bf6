// Package proctest runs a command of this repository as an operating
// system process in a test, against an embedded NATS server the test
// stops and starts again: what a process does when its NATS server goes
// away is only seen in a process of its own.
package proctest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/embedded"
	"github.com/holdover-dev/holdover/streams"
)

// Build compiles the main package of the test's folder into a temporary
// folder and returns the binary's path.
func Build(t *testing.T, name string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

// FreeAddr is a loopback address no one listens on.
func FreeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

// FreePort is a loopback port no one listens on, for a server the test
// restarts on it.
func FreePort(t *testing.T) int {
	t.Helper()
	return int(netip.MustParseAddrPort(FreeAddr(t)).Port())
}

// Process is a running command whose output (stdout and stderr) the
// test reads.
type Process struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once it has exited; cmd.ProcessState says how
	mu     sync.Mutex
	out    bytes.Buffer
}

// Start runs bin with args; the test's end stops it with SIGTERM.
func Start(t *testing.T, bin string, args ...string) *Process {
	t.Helper()
	p := &Process{cmd: exec.Command(bin, args...), exited: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p, p
	require.NoError(t, p.cmd.Start())
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		<-p.exited
		if t.Failed() {
			t.Logf("%s output:\n%s", filepath.Base(bin), p.Output())
		}
	})
	return p
}

// ExitCode waits until the process exits by itself and returns its exit
// code, or fails the test if it still runs after within.
func (p *Process) ExitCode(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-p.exited:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(within):
		t.Fatalf("the process still runs after %v", within)
		return 0
	}
}

func (p *Process) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

// Output is what the process has written so far.
func (p *Process) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// Health is the status code of GET url, 0 while nothing answers.
func Health(url string) int {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// AwaitHealth waits until GET url answers code, or fails the test with
// what it answered last.
func AwaitHealth(t *testing.T, url string, code int, within time.Duration, what string) {
	t.Helper()
	var last atomic.Value
	if !assert.Eventually(t, func() bool {
		got, body := healthBody(url)
		last.Store(fmt.Sprintf("%d %s", got, body))
		return got == code
	}, within, 50*time.Millisecond) {
		t.Fatalf("%s: /healthz answered %v", what, last.Load())
	}
}

// healthBody is the status code and body of GET url.
func healthBody(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// RidesOutAServerRestart checks the process serving /healthz at health
// through a restart of its NATS server srv (started with opts, a fixed
// port and store folder): ready before; not ready, and saying so in its
// log, while the server is down; and ready again by itself, after
// reconnecting, once the server is back on the same address.
func RidesOutAServerRestart(t *testing.T, p *Process, health string, srv *embedded.Server, opts embedded.Options) {
	t.Helper()
	const patience = 20 * time.Second
	AwaitHealth(t, health, http.StatusOK, patience, "ready against a running server")

	stopped := time.Now()
	srv.Stop()
	AwaitHealth(t, health, http.StatusServiceUnavailable, patience, "not ready while the server is down")
	t.Logf("not ready %v after the server stopped", time.Since(stopped).Round(time.Millisecond))
	require.Eventually(t, func() bool { return bytes.Contains([]byte(p.Output()), []byte("disconnected from NATS")) }, patience, 50*time.Millisecond)

	back, err := embedded.Start(opts)
	require.NoError(t, err)
	t.Cleanup(back.Stop)
	started := time.Now()
	AwaitHealth(t, health, http.StatusOK, patience, "ready again once the server is back")
	t.Logf("ready again %v after the server was back", time.Since(started).Round(time.Millisecond))
	require.Contains(t, p.Output(), "reconnected to NATS")
}

// RestartRefusing stops srv (started with opts, a fixed port) and starts
// it again on the same address with authentication on, under credentials
// nobody holds: every client it had is refused on its reconnect, twice,
// and so closes its connection for good.
func RestartRefusing(t *testing.T, srv *embedded.Server, opts embedded.Options) {
	t.Helper()
	srv.Stop()
	var err error
	opts.Auth, err = auth.Init(t.TempDir())
	require.NoError(t, err)
	opts.StoreDir = t.TempDir()
	back, err := embedded.Start(opts)
	require.NoError(t, err)
	t.Cleanup(back.Stop)
}

// Cluster is embedded servers routed into one JetStream cluster on
// loopback, each with its own store folder and fixed ports, so a stopped
// server starts again as itself.
type Cluster struct {
	t       *testing.T
	opts    []embedded.Options
	servers []*embedded.Server
}

// StartCluster starts n servers and waits until the cluster has
// provisioned the topology with n replicas (its meta leader is elected).
func StartCluster(t *testing.T, n int) *Cluster {
	t.Helper()
	c := &Cluster{t: t, servers: make([]*embedded.Server, n)}
	routes := make([]string, n)
	ports := make([]int, n)
	for i := range n {
		ports[i] = FreePort(t)
		routes[i] = fmt.Sprintf("nats-route://127.0.0.1:%d", ports[i])
	}
	for i := range n {
		c.opts = append(c.opts, embedded.Options{StoreDir: t.TempDir(), Port: FreePort(t), Name: fmt.Sprintf("n%d", i+1),
			Cluster: &embedded.ClusterOptions{Name: "proctest", Port: ports[i], Routes: routes}})
		c.Start(i)
	}
	t.Cleanup(func() {
		for i := range c.servers {
			c.Stop(i)
		}
	})
	nc, err := nats.Connect(c.URL(0))
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := streams.Provision(context.Background(), js, streams.Config{Replicas: n})
		return err == nil
	}, 30*time.Second, 100*time.Millisecond, "the cluster provisions R%d", n)
	return c
}

// URL is server i's client URL.
func (c *Cluster) URL(i int) string { return fmt.Sprintf("nats://127.0.0.1:%d", c.opts[i].Port) }

// Start starts server i, again if it was stopped.
func (c *Cluster) Start(i int) {
	c.t.Helper()
	srv, err := embedded.Start(c.opts[i])
	require.NoError(c.t, err)
	c.servers[i] = srv
}

// Stop stops server i if it runs.
func (c *Cluster) Stop(i int) {
	if c.servers[i] != nil {
		c.servers[i].Stop()
		c.servers[i] = nil
	}
}

// RidesOutALostQuorum checks the process serving /healthz at health,
// connected to server 0 of a 3-server cluster, through the loss of the
// other two: server 0 stays up, and so does the process's connection,
// but JetStream has no quorum, so the process is not ready; once they are
// back it is ready again by itself.
func RidesOutALostQuorum(t *testing.T, health string, c *Cluster) {
	t.Helper()
	const patience = 60 * time.Second
	AwaitHealth(t, health, http.StatusOK, patience, "ready on a whole cluster")

	lost := time.Now()
	c.Stop(1)
	c.Stop(2)
	AwaitHealth(t, health, http.StatusServiceUnavailable, patience, "not ready without a quorum")
	t.Logf("not ready %v after the quorum was lost", time.Since(lost).Round(time.Millisecond))

	back := time.Now()
	c.Start(1)
	c.Start(2)
	AwaitHealth(t, health, http.StatusOK, patience, "ready again once the quorum is back")
	t.Logf("ready again %v after the servers were back", time.Since(back).Round(time.Millisecond))
}
