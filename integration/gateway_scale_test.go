package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/clientwire"
	"github.com/holdover-dev/holdover/gateway"
)

// The scale test runs only when asked, since it takes a while and wants
// the machine to itself:
//
//	HOLDOVER_GATEWAY_SCALE=1 go test -run 'TestGatewayScale$' -v ./integration/
//
// (HOLDOVER_GATEWAY_SCALE=v1 has the Clients speak protocol 1, one frame
// per message.)
//
// It serves 1,000 WebSocket Clients watching 100 Sessions (10 each) from
// one gateway and reports the request fan-out latency (from the agent's
// askTimed call to each watching Client's request frame) and the gateway's
// memory per idle connection. The Clients run in a child process, so the
// gateway's memory is measured without theirs.
const (
	scaleEnv       = "HOLDOVER_GATEWAY_SCALE"
	scaleClientEnv = "HOLDOVER_GATEWAY_SCALE_CLIENT" // the gateway URL, in the child
	scaleSessions  = 100
	scaleClients   = 1000
	scaleRounds    = 5
)

// scaleLine is one line the Client process writes.
type scaleLine struct {
	Ready    int         `json:"ready,omitempty"`
	Received []scaleRecv `json:"received,omitempty"`
	Failed   string      `json:"failed,omitempty"`
}

// scaleRecv is one request frame's arrival at one Client.
type scaleRecv struct {
	Session string `json:"s"`
	CallID  string `json:"c"`
	At      int64  `json:"at"` // wall clock, Unix ns
}

func scaleSession(i int) string { return "scale-" + strconv.Itoa(i%scaleSessions) }

// scaleProtocol is the protocol the Clients speak: the gateway's newest,
// or 1 when HOLDOVER_GATEWAY_SCALE is v1.
func scaleProtocol() int {
	if os.Getenv(scaleEnv) == "v1" {
		return 1
	}
	return clientwire.ProtocolVersion
}

func TestGatewayScale(t *testing.T) {
	if os.Getenv(scaleEnv) == "" {
		t.Skip("set " + scaleEnv + "=1 to run the 1,000-Client scale test")
	}
	w := newGWWorld(t, gateway.Limits{})
	agents := make(map[string]*holdover.AgentRef)
	for i := range scaleSessions {
		agents[scaleSession(i)] = w.live(scaleSession(i))
	}

	child := exec.Command(os.Args[0], "-test.run=^TestGatewayScaleClients$", "-test.count=1")
	child.Env = append(os.Environ(), scaleClientEnv+"="+w.url+"?token="+gwTokenBo)
	child.Stderr = os.Stderr
	toChild, err := child.StdinPipe()
	require.NoError(t, err)
	fromChild, err := child.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, child.Start())
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	lines := bufio.NewScanner(fromChild)
	lines.Buffer(make([]byte, 1<<20), 64<<20)
	next := func() scaleLine {
		t.Helper()
		for lines.Scan() {
			var l scaleLine
			if json.Unmarshal(lines.Bytes(), &l) != nil {
				continue // the test framework's own output
			}
			require.Empty(t, l.Failed, "the Client process failed")
			return l
		}
		t.Fatalf("the Client process ended: %v", lines.Err())
		return scaleLine{}
	}
	say := func(cmd string) {
		_, err := io.WriteString(toChild, cmd+"\n")
		require.NoError(t, err)
	}

	// Phase one: one Client per Session, so every Session's feed exists.
	require.Equal(t, scaleSessions, next().Ready)
	heap1, stacks1, goroutines1 := scaleMemory()
	// Phase two: the other 900, each on a Session whose feed is running.
	say("more")
	require.Equal(t, scaleClients, next().Ready)
	heap2, stacks2, goroutines2 := scaleMemory()
	added := uint64(scaleClients - scaleSessions)
	perConn := (heap2 + stacks2 - heap1 - stacks1) / added

	// Where each request was published: a plain subscriber on every
	// Session's request subject, as the gateway is one, separates the
	// worker's share of the latency from the gateway's.
	var mu sync.Mutex
	published := make(map[string]int64)
	tap := w.conn()
	_, err = tap.Subscribe("holdover.session.*.ask", func(m *nats.Msg) {
		at := time.Now().UnixNano()
		var p gwPayload
		if json.Unmarshal(m.Data, &p) == nil {
			mu.Lock()
			published[p.Session+"/"+p.CallID] = at
			mu.Unlock()
		}
	})
	require.NoError(t, err)
	require.NoError(t, tap.Flush())

	// Fan-out, two ways: a burst asks once in every Session at the same
	// moment; one at a time asks in one Session after another. The first
	// Client of each Session answers, so every call ends.
	sent := make(map[string]int64)
	ask := func(sid, call string) {
		mu.Lock()
		sent[sid+"/"+call] = time.Now().UnixNano()
		mu.Unlock()
		out, err := w.agent.AskTimed(context.Background(), fgTimed(sid, call, agents[sid], 60_000))
		if err != nil || out.Pending {
			t.Errorf("ask in %s: %v %+v", sid, err, out)
		}
	}
	for round := range scaleRounds {
		var calls sync.WaitGroup
		for i := range scaleSessions {
			calls.Add(1)
			go func() {
				defer calls.Done()
				ask(scaleSession(i), fmt.Sprintf("burst%d", round))
			}()
		}
		calls.Wait()
	}
	for round := range scaleRounds {
		for i := range scaleSessions {
			ask(scaleSession(i), fmt.Sprintf("single%d", round))
		}
	}
	say("report")
	received := next().Received
	require.Len(t, received, 2*scaleRounds*scaleClients, "every Client got every request of its Session")
	mu.Lock()
	defer mu.Unlock()
	for _, mode := range []string{"burst", "single"} {
		var total, gw []time.Duration
		for _, r := range received {
			key := r.Session + "/" + r.CallID
			if !strings.HasPrefix(r.CallID, mode) {
				continue
			}
			total = append(total, time.Duration(r.At-sent[key]))
			gw = append(gw, time.Duration(r.At-published[key]))
		}
		report := fmt.Sprintf("gateway scale, %s: %d Clients on %d Sessions, %d frames; from askTimed: %s; from publish: %s",
			mode, scaleClients, scaleSessions, len(total), scalePercentiles(total), scalePercentiles(gw))
		t.Log(report)
		fmt.Println(report)
	}
	report := fmt.Sprintf("gateway scale: per idle connection %d B (heap %d B, stacks %d B), %.1f goroutines",
		perConn, (heap2-heap1)/added, (stacks2-stacks1)/added, float64(goroutines2-goroutines1)/float64(added))
	t.Log(report)
	fmt.Println(report)
	say("quit")
}

func scalePercentiles(d []time.Duration) string {
	slices.Sort(d)
	at := func(p float64) time.Duration { return d[int(p*float64(len(d)-1))].Round(10 * time.Microsecond) }
	return fmt.Sprintf("p50 %v p99 %v max %v", at(0.50), at(0.99), d[len(d)-1].Round(10*time.Microsecond))
}

// scaleMemory is the process's live heap and goroutine stacks after a GC.
func scaleMemory() (heap, stacks uint64, goroutines int) {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse, m.StackInuse, runtime.NumGoroutine()
}

// TestGatewayScaleClients is the Client process of TestGatewayScale: it
// opens the Clients in two phases, records when each request frame
// arrives, answers as the first Client of each Session, and reports.
func TestGatewayScaleClients(t *testing.T) {
	url := os.Getenv(scaleClientEnv)
	if url == "" {
		t.Skip("the Client process of TestGatewayScale")
	}
	out := json.NewEncoder(os.Stdout)
	fail := func(err error) {
		_ = out.Encode(scaleLine{Failed: err.Error()})
		os.Exit(1)
	}
	var (
		mu       sync.Mutex
		received []scaleRecv
	)
	open := func(i int) *websocket.Conn {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		ws, _, err := websocket.Dial(ctx, url, nil)
		if err != nil {
			fail(err)
		}
		ws.SetReadLimit(8 << 20)
		sid := scaleSession(i)
		for _, f := range []map[string]any{
			{"type": "hello", "protocol": scaleProtocol(), "client": "scale"},
			{"type": "watch", "id": "w", "session": sid, "fromSeq": 1},
		} {
			data, _ := json.Marshal(f)
			if err := ws.Write(ctx, websocket.MessageText, data); err != nil {
				fail(err)
			}
		}
		live := make(chan struct{})
		go func() {
			var once sync.Once
			for {
				_, data, err := ws.Read(context.Background())
				if err != nil {
					return
				}
				at := time.Now().UnixNano()
				frames, err := gwMessageFrames(data)
				if err != nil {
					continue
				}
				for _, f := range frames {
					switch f.Type {
					case "ready":
						once.Do(func() { close(live) })
					case "request":
						var p gwPayload
						_ = json.Unmarshal(f.Payload, &p)
						mu.Lock()
						received = append(received, scaleRecv{Session: f.Session, CallID: p.CallID, At: at})
						mu.Unlock()
						if i < scaleSessions { // the first Client of the Session answers
							settle, _ := json.Marshal(map[string]any{"type": "settle", "id": f.ID, "value": map[string]any{"answers": fgAnswer("yes")}})
							_ = ws.Write(context.Background(), websocket.MessageText, settle)
						}
					}
				}
			}
		}()
		select {
		case <-live:
		case <-ctx.Done():
			fail(fmt.Errorf("client %d: the watch never went live", i))
		}
		return ws
	}
	openRange := func(from, to int) {
		var wg sync.WaitGroup
		slots := make(chan struct{}, 50)
		for i := from; i < to; i++ {
			wg.Add(1)
			slots <- struct{}{}
			go func() {
				defer func() { <-slots; wg.Done() }()
				open(i)
			}()
		}
		wg.Wait()
	}

	openRange(0, scaleSessions)
	_ = out.Encode(scaleLine{Ready: scaleSessions})
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch in.Text() {
		case "more":
			openRange(scaleSessions, scaleClients)
			_ = out.Encode(scaleLine{Ready: scaleClients})
		case "report":
			// Every request reached its answering Client; the others' copies
			// left the gateway at the same moment and are arriving now.
			deadline := time.Now().Add(30 * time.Second)
			for {
				mu.Lock()
				n := len(received)
				mu.Unlock()
				if n >= 2*scaleRounds*scaleClients || time.Now().After(deadline) {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			mu.Lock()
			_ = out.Encode(scaleLine{Received: received})
			mu.Unlock()
		case "quit":
			return
		}
	}
}
