package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/gateway"
	"github.com/holdover-dev/holdover/sessionlog"
	"github.com/holdover-dev/holdover/streams"
)

// gatewayProc is the shipped gateway binary running against a real
// nats-server on the gateway role's credentials, with a token per name in
// tokens (each granting every Session).
type gatewayProc struct {
	*fgProc
	url     string // ws://…/ws
	metrics string // host:port of /metrics
}

// gatewayBinary builds cmd/gateway without the race detector, whose
// shadow memory would swamp what the gateway itself holds.
var gatewayBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "holdover-gateway-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "gateway")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/holdover-dev/holdover/cmd/gateway").CombinedOutput(); err != nil {
		return "", fmt.Errorf("build cmd/gateway: %v\n%s", err, out)
	}
	return bin, nil
})

func startGatewayProc(t *testing.T, env *embeddedtest.Env, tokens []string, flags ...string) *gatewayProc {
	t.Helper()
	bin, err := gatewayBinary()
	require.NoError(t, err)
	grants := map[string]gateway.Grant{}
	for _, tok := range tokens {
		grants[tok] = gateway.Grant{User: tok, Sessions: []string{gateway.AllSessions}}
	}
	data, err := json.Marshal(map[string]any{"tokens": grants})
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "tokens.json")
	require.NoError(t, os.WriteFile(file, data, 0o600))
	listen, metrics := freeLoopback(t), freeLoopback(t)
	args := append([]string{"--listen", listen, "--metrics-addr", metrics, "--nats", env.Server.ClientURL(),
		"--creds", env.Auth.Creds(env.Tenant, auth.Gateway), "--tokens", file}, flags...)
	p := &gatewayProc{fgProc: fgSpawn(t, "gateway", exec.Command(bin, args...)), url: "ws://" + listen + "/ws", metrics: metrics}
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + listen + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, fgPatience, 10*time.Millisecond, "the gateway never got ready")
	return p
}

func freeLoopback(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

// rss is the process's resident memory in bytes (VmRSS).
func (p *gatewayProc) rss(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	require.NoError(t, err)
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc status")
	return 0
}

// dial connects a Client that reads every frame (gwClient) and says hello.
func (p *gatewayProc) dial(t *testing.T, token string) *gwClient {
	t.Helper()
	c := (&gwWorld{fgWorld: &fgWorld{t: t}, url: p.url}).dial(token)
	c.welcome()
	return c
}

// A Client that stops reading costs the gateway its send queue's bound,
// not its Sessions' history. Eight such Clients watch a Session with a
// 40 MB history and never read: the gateway's memory stays within twice
// what eight idle connections cost. Each is closed as too slow (1008,
// with the reason) once a write has waited past the write timeout, and
// one that reads again gets that close frame after what was on its way.
// A healthy Client of the same Session reads its whole history, gets a
// live event while the slow ones are stuck, and stays connected.
func TestGatewayBoundsTheMemoryOfClientsThatStopReading(t *testing.T) {
	const (
		slowClients  = 8
		eventBytes   = 10 << 10
		history      = 4000 // events of eventBytes: 40 MB
		writeTimeout = 20 * time.Second
	)
	queueBytes := float64(gateway.DefaultLimits().SendQueueBytes)
	env := embeddedtest.StartSecure(t, streams.Config{Memory: true})
	ctx := context.Background()
	log := sessionlog.New(env.JS, env.Topology.Sessions)
	at := time.Now().UTC()
	text := events.Text(strings.Repeat("x", eventBytes))
	var last uint64
	for i := range history {
		seq, err := log.Append(ctx, "big", last, events.New(at, &events.AssistantMessage{ID: fmt.Sprint("a", i), Content: text}))
		require.NoError(t, err)
		last = seq
	}
	gw := startGatewayProc(t, env, []string{"healthy", "idle", "slow"}, "--write-timeout", writeTimeout.String())

	healthy := gw.dial(t, "healthy")
	healthy.send(map[string]any{"type": "watch", "id": "w1", "session": "big", "fromSeq": 1})
	healthy.take("the ready frame of the whole history", gwTypeID("ready", "w1"))
	read := 0
	for _, f := range healthy.framesSnapshot() {
		read += len(f.Events)
	}
	require.Equal(t, history, read, "the healthy Client read the whole history")

	for i := range slowClients {
		idle := gw.dial(t, "idle")
		idle.watchLive(fmt.Sprint("w", i), "small")
	}
	idleRSS := gw.rss(t)

	slow := make([]*websocket.Conn, slowClients)
	for i := range slow {
		dctx, cancel := context.WithTimeout(ctx, fgPatience)
		ws, _, err := websocket.Dial(dctx, gw.url+"?token=slow", nil)
		cancel()
		require.NoError(t, err)
		ws.SetReadLimit(16 << 20)
		t.Cleanup(func() { _ = ws.CloseNow() })
		for _, frame := range []string{`{"type":"hello","protocol":2,"client":"slow"}`, `{"type":"watch","id":"w1","session":"big","fromSeq":1}`} {
			require.NoError(t, ws.Write(ctx, websocket.MessageText, []byte(frame)))
		}
		slow[i] = ws
	}
	queued := 0.0
	require.Eventually(t, func() bool {
		queued = scrape(t, gw.metrics, "holdover_gateway_send_queue_bytes")
		// A stalled history waits while half the queue's bound waits.
		return queued >= slowClients*queueBytes/2
	}, fgPatience, 50*time.Millisecond, "the slow Clients' queues never filled")
	slowRSS := gw.rss(t)
	t.Logf("gateway RSS: %.1f MiB with %d idle connections and a healthy one; %.1f MiB with %d Clients that stopped reading a %.0f MB history added (%.2fx); %.1f MiB queued for them",
		mib(idleRSS), slowClients, mib(slowRSS), slowClients, history*eventBytes/1e6, float64(slowRSS)/float64(idleRSS), queued/(1<<20))
	require.LessOrEqual(t, slowRSS, 2*idleRSS, "slow readers cost the gateway their queue's bound, not their history")

	// The healthy Client is unaffected: a live event reaches it.
	seq, err := log.Append(ctx, "big", last, events.New(at, &events.AssistantMessage{ID: "live", Content: events.Text("live")}))
	require.NoError(t, err)
	healthy.take("the live event", func(f gwFrame) bool { return f.Type == "events" && len(f.Events) == 1 && f.Events[0].Seq == seq })

	require.Eventually(t, func() bool {
		return scrape(t, gw.metrics, "holdover_gateway_slow_clients_total") == slowClients
	}, writeTimeout+fgPatience, 50*time.Millisecond, "the slow Clients were not closed")
	for i, ws := range slow {
		var err error
		for err == nil {
			_, _, err = ws.Read(ctx)
		}
		var closed websocket.CloseError
		require.ErrorAs(t, err, &closed, "slow Client %d", i)
		assert.Equal(t, websocket.StatusPolicyViolation, closed.Code, "slow Client %d", i)
		assert.Contains(t, closed.Reason, "too slow: a write waited "+writeTimeout.String(), "slow Client %d", i)
	}
	// A connection's queue is released by its cleanup, which runs beside
	// the close frame's write: wait for it rather than race it.
	require.Eventually(t, func() bool {
		return scrape(t, gw.metrics, "holdover_gateway_send_queue_bytes") == 0
	}, fgPatience, 10*time.Millisecond, "closed Clients hold no queue")
	healthy.watchLive("w2", "small")
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// A live frame that finds a Client's send queue full, in frames or in
// bytes, closes the Client as too slow (1008), with the queue in the
// reason, while a healthy Client of the same Session gets every event.
// The healthy Client's last event says the gateway has handed every one
// out, to the slow Client too.
func TestGatewayClosesAClientWhoseQueuePassesItsBound(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		limits gateway.Limits
		full   func(frames, bytes int) bool
	}{
		{"frames", gateway.Limits{SendQueue: 4, SendQueueBytes: 64 << 20}, func(frames, _ int) bool { return frames == 4 }},
		{"bytes", gateway.Limits{SendQueue: 256, SendQueueBytes: 512 << 10}, func(frames, bytes int) bool { return frames < 256 && bytes >= 512<<10 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.limits.WriteTimeout = time.Minute // the queue's bound closes it, not a stuck write
			w := newGWWorld(t, tc.limits)
			healthy := w.dial(gwTokenAna)
			healthy.welcome()
			healthy.watchLive("w1", "s1")

			ctx, cancel := context.WithTimeout(context.Background(), fgPatience)
			defer cancel()
			slow, _, err := websocket.Dial(ctx, w.url+"?token="+gwTokenAna, nil)
			require.NoError(t, err)
			slow.SetReadLimit(16 << 20)
			t.Cleanup(func() { _ = slow.CloseNow() })
			require.NoError(t, slow.Write(ctx, websocket.MessageText, []byte(`{"type":"hello","protocol":2,"client":"slow"}`)))
			require.NoError(t, slow.Write(ctx, websocket.MessageText, []byte(`{"type":"watch","id":"w1","session":"s1"}`)))
			for ready := false; !ready; {
				_, data, err := slow.Read(ctx)
				require.NoError(t, err)
				ready = strings.Contains(string(data), `"type":"ready"`)
			}

			// The slow Client reads no more. 10 MB of events fill the
			// sockets' buffers (a socket that is not read keeps its
			// first, small receive window), then its queue. Each event is
			// appended once the healthy Client has the one before, so
			// the healthy Client never has more than one waiting.
			text := events.Text(strings.Repeat("x", eventSize))
			last, err := w.sessions.Last(ctx, "s1")
			require.NoError(t, err)
			for i := range 50 {
				actx, cancel := context.WithTimeout(context.Background(), fgPatience)
				last, err = w.sessions.Append(actx, "s1", last, events.New(time.Now().UTC(), &events.AssistantMessage{ID: fmt.Sprint("a", i), Content: text}))
				cancel()
				require.NoError(t, err)
				healthy.take(fmt.Sprint("event ", i), func(f gwFrame) bool {
					return f.Type == "events" && len(f.Events) > 0 && f.Events[len(f.Events)-1].Seq == last
				})
			}

			drain, cancelDrain := context.WithTimeout(context.Background(), fgPatience)
			defer cancelDrain()
			for err == nil {
				_, _, err = slow.Read(drain)
			}
			var closed websocket.CloseError
			require.ErrorAs(t, err, &closed)
			assert.Equal(t, websocket.StatusPolicyViolation, closed.Code)
			var frames, bytes int
			_, scanErr := fmt.Sscanf(closed.Reason, "too slow: %d frames (%d bytes) were waiting", &frames, &bytes)
			require.NoError(t, scanErr, "reason %q", closed.Reason)
			assert.True(t, tc.full(frames, bytes), "closed with %d frames, %d bytes waiting", frames, bytes)
			healthy.alive("c1")
		})
	}
}

// eventSize is the text of each event of the live burst above.
const eventSize = 200 << 10

// A Client that reads is never closed for its own history: the history
// fills half its queue at most, and what happens live meanwhile (here the
// results of calls sent while a 3 MB history loads) has the other half.
func TestGatewayKeepsRoomForLiveFramesWhileAHistoryLoads(t *testing.T) {
	t.Parallel()
	w := newGWWorld(t, gateway.Limits{})
	ctx := context.Background()
	text := events.Text(strings.Repeat("x", 10<<10))
	last, err := w.sessions.Last(ctx, "s1")
	require.NoError(t, err)
	for i := range 300 {
		last, err = w.sessions.Append(ctx, "s1", last, events.New(time.Now().UTC(), &events.AssistantMessage{ID: fmt.Sprint("a", i), Content: text}))
		require.NoError(t, err)
	}
	c := w.dial(gwTokenAna)
	c.welcome()
	c.send(map[string]any{"type": "watch", "id": "w1", "session": "s1", "fromSeq": 1})
	calls := gateway.DefaultLimits().MaxCalls // all in progress at once
	for i := range calls {
		c.send(map[string]any{"type": "call", "id": fmt.Sprint("c", i), "method": "userQuestions.view", "params": map[string]any{"session": "s1"}})
	}
	c.take("the ready frame", gwTypeID("ready", "w1"))
	for i := range calls {
		c.take(fmt.Sprint("the result of c", i), gwTypeID("result", fmt.Sprint("c", i)))
	}
	read := 0
	for _, f := range c.framesSnapshot() {
		read += len(f.Events)
	}
	assert.Equal(t, 300, read, "the whole history")
	c.alive("c-after")
}
