package integration

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/answerer"
	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/clientwire"
	"github.com/holdover-dev/holdover/gateway"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/ops/opstest"
	"github.com/holdover-dev/holdover/sessionlog"
)

// gwWorld is the foreground world (a worker with Host deadlines on a fake
// clock, an agent) plus a gateway on a connection of its own, serving on
// a loopback port, with three users:
//
//	ana   may use s1 and s2
//	bo    may use every Session
//	(no token) nobody
type gwWorld struct {
	*fgWorld
	gw       *gateway.Server
	gwConn   *nats.Conn
	url      string // ws://127.0.0.1:port/ws
	sessions *sessionlog.Log
}

const (
	gwTokenAna = "token-ana"
	gwTokenBo  = "token-bo"
)

func newGWWorld(t testing.TB, limits gateway.Limits) *gwWorld {
	t.Helper()
	w := &gwWorld{fgWorld: newFGWorld(t)}
	w.sessions = sessionlog.New(w.env.JS, w.env.Topology.Sessions)
	w.gwConn = w.as(auth.Gateway)
	w.gw, w.url = w.startGateway(w.gwConn, limits)
	return w
}

// startGateway serves a gateway on nc until the test ends.
func (w *gwWorld) startGateway(nc *nats.Conn, limits gateway.Limits) (*gateway.Server, string) {
	w.t.Helper()
	return serveGateway(w.t, w.env.Server.ClientURL(), nc, limits, w.fgWorld.log)
}

// serveGateway serves a gateway with the test users on nc (a server at
// natsURL) on a loopback port until the test ends, and returns its
// WebSocket address.
func serveGateway(tb testing.TB, natsURL string, nc *nats.Conn, limits gateway.Limits, log *slog.Logger) (*gateway.Server, string) {
	tb.Helper()
	tokens, err := gateway.NewTokens(map[string]gateway.Grant{
		gwTokenAna: {User: "ana", Sessions: []string{"s1", "s2"}},
		gwTokenBo:  {User: "bo", Sessions: []string{gateway.AllSessions}},
	})
	require.NoError(tb, err)
	ans, err := answerer.New(nc, answerer.Config{ReleaseBound: fgBound, Log: log})
	require.NoError(tb, err)
	js, err := jetstream.New(nc) // the gateway's own credentials, for everything it does
	require.NoError(tb, err)
	srv, err := gateway.New(gateway.Config{
		NATS:      nc,
		JetStream: js,
		Tokens:    tokens,
		Services:  []gateway.Service{gateway.UserQuestions(ans), gateway.Sessions()},
		Limits:    limits,
		Logger:    log,
	})
	require.NoError(tb, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(tb, err)
	tb.Cleanup(func() { require.NoError(tb, ans.Close()) }) // after the gateway, which uses it
	opstest.Start(tb, ops.Component{Name: "gateway", Run: func(ctx context.Context, ready func()) error { return srv.Run(ctx, ln, ready) }})
	return srv, "ws://" + ln.Addr().String() + "/ws"
}

// gwFrame is any frame the gateway sends; which fields are set depends on Type.
type gwFrame struct {
	Type     string          `json:"type"`
	ID       string          `json:"id"`
	Session  string          `json:"session"`
	Code     string          `json:"code"`
	Message  string          `json:"message"`
	ClientID string          `json:"clientId"`
	Protocol int             `json:"protocol"`
	User     string          `json:"user"`
	Event    string          `json:"event"`
	Payload  json.RawMessage `json:"payload"`
	Events   []gwEvent       `json:"events"`
	View     json.RawMessage `json:"view"`
	Data     json.RawMessage `json:"data"`
	Result   json.RawMessage `json:"result"`
	Reason   string          `json:"reason"`
	Sessions json.RawMessage `json:"sessions"`
	Error    *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

type gwEvent struct {
	Seq  uint64          `json:"seq"`
	Type string          `json:"type"`
	At   time.Time       `json:"at"`
	Data json.RawMessage `json:"data"`
}

// gwClient is a WebSocket Client of the gateway, as a browser would be.
// A reader goroutine keeps every frame; tests take them by predicate.
type gwClient struct {
	t  testing.TB
	ws *websocket.Conn

	mu     sync.Mutex
	frames []gwFrame
	taken  []bool
	// messages counts the WebSocket messages read, batches those that
	// were arrays of frames (protocol 2).
	messages, batches int
	notify            chan struct{}
	done              chan struct{}
	status            websocket.StatusCode // the close status, once done
}

// dial connects with token in the address, as the web Client does, and
// says hello.
func (w *gwWorld) dial(token string) *gwClient {
	w.t.Helper()
	c := w.dialRaw(w.url + "?token=" + token)
	c.send(map[string]any{"type": "hello", "protocol": clientwire.ProtocolVersion, "client": "test"})
	return c
}

// dialRaw connects without saying hello.
func (w *gwWorld) dialRaw(url string) *gwClient {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), fgPatience)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, url, nil)
	require.NoError(w.t, err)
	ws.SetReadLimit(8 << 20)
	c := &gwClient{t: w.t, ws: ws, notify: make(chan struct{}, 1), done: make(chan struct{})}
	go c.read()
	w.t.Cleanup(func() { _ = ws.CloseNow() })
	return c
}

func (c *gwClient) read() {
	defer close(c.done)
	for {
		_, data, err := c.ws.Read(context.Background())
		if err != nil {
			c.mu.Lock()
			c.status = websocket.CloseStatus(err)
			c.mu.Unlock()
			return
		}
		frames, err := gwMessageFrames(data)
		if err != nil {
			c.t.Errorf("the gateway sent a message that is not a frame or an array of frames: %q", data)
			continue
		}
		c.mu.Lock()
		c.messages++
		if len(data) > 0 && data[0] == '[' {
			c.batches++
		}
		for _, f := range frames {
			c.frames = append(c.frames, f)
			c.taken = append(c.taken, false)
		}
		c.mu.Unlock()
		select {
		case c.notify <- struct{}{}:
		default:
		}
	}
}

// gwMessageFrames reads the frames of one message from the gateway: a
// JSON object, or from protocol 2 on an array of them, in order.
func gwMessageFrames(data []byte) ([]gwFrame, error) {
	if len(data) > 0 && data[0] == '[' {
		var frames []gwFrame
		if err := json.Unmarshal(data, &frames); err != nil {
			return nil, err
		}
		if len(frames) == 0 {
			return nil, errors.New("an empty batch")
		}
		return frames, nil
	}
	var f gwFrame
	err := json.Unmarshal(data, &f)
	return []gwFrame{f}, err
}

// send writes one frame: any value, encoded as JSON, or raw bytes.
func (c *gwClient) send(frame any) {
	c.t.Helper()
	data, ok := frame.([]byte)
	if !ok {
		var err error
		data, err = json.Marshal(frame)
		require.NoError(c.t, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), fgPatience)
	defer cancel()
	require.NoError(c.t, c.ws.Write(ctx, websocket.MessageText, data))
}

// take waits for the first frame not yet taken that matches, and takes it.
func (c *gwClient) take(what string, match func(gwFrame) bool) gwFrame {
	c.t.Helper()
	deadline := time.After(fgPatience)
	for {
		if f, ok := c.find(match); ok {
			return f
		}
		select {
		case <-c.notify:
		case <-c.done:
			// The reader keeps every frame before it stops: one last look.
			if f, ok := c.find(match); ok {
				return f
			}
			c.t.Fatalf("the connection closed (status %d) before %s arrived; frames: %+v", c.closeStatus(), what, c.framesSnapshot())
		case <-deadline:
			c.t.Fatalf("no %s arrived; frames: %+v", what, c.framesSnapshot())
		}
	}
}

// find takes a matching frame if one has arrived.
func (c *gwClient) find(match func(gwFrame) bool) (gwFrame, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, f := range c.frames {
		if !c.taken[i] && match(f) {
			c.taken[i] = true
			return f, true
		}
	}
	return gwFrame{}, false
}

func (c *gwClient) framesSnapshot() []gwFrame {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]gwFrame(nil), c.frames...)
}

func (c *gwClient) closeStatus() websocket.StatusCode {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status
}

// Predicates.

func gwType(typ string) func(gwFrame) bool {
	return func(f gwFrame) bool { return f.Type == typ }
}

func gwTypeID(typ, id string) func(gwFrame) bool {
	return func(f gwFrame) bool { return f.Type == typ && f.ID == id }
}

// gwError matches an error frame with code about the frame with id ("" for
// the connection).
func gwError(id, code string) func(gwFrame) bool {
	return func(f gwFrame) bool { return f.Type == "error" && f.ID == id && f.Code == code }
}

// welcome waits for the welcome frame.
func (c *gwClient) welcome() gwFrame {
	c.t.Helper()
	return c.take("welcome", gwType("welcome"))
}

// closed waits for the gateway to close the connection and returns its status.
func (c *gwClient) closed() websocket.StatusCode {
	c.t.Helper()
	select {
	case <-c.done:
		return c.closeStatus()
	case <-time.After(fgPatience):
		c.t.Fatal("the gateway did not close the connection")
		return 0
	}
}

// watchLive watches a Session and waits until the watch is live: its
// ready frame has come.
func (c *gwClient) watchLive(id, sid string) {
	c.t.Helper()
	c.send(map[string]any{"type": "watch", "id": id, "session": sid, "fromSeq": 1})
	c.take("the ready frame of "+id, gwTypeID("ready", id))
}

// settle answers request id with answers.
func (c *gwClient) settle(id string, answers []holdover.Answer) {
	c.t.Helper()
	c.send(map[string]any{"type": "settle", "id": id, "value": map[string]any{"answers": answers}})
}

// alive proves the connection still works: a call round-trips.
func (c *gwClient) alive(id string) {
	c.t.Helper()
	c.send(map[string]any{"type": "call", "id": id, "method": "userQuestions.view", "params": map[string]any{"session": "s1"}})
	f := c.take("the result of "+id, func(f gwFrame) bool { return f.ID == id })
	require.Equal(c.t, "result", f.Type, "call %s: %+v", id, f)
}
