package termclient

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/clientwire"
)

// Config says where the gateway is and who is connecting.
type Config struct {
	// Gateway is the gateway's address: http(s)://host:port, or the
	// WebSocket address ws(s)://host:port/ws itself.
	Gateway string
	// Token is the access token. It travels in the hello frame, not in
	// the address, so it stays out of the gateway's access logs.
	Token string
	// Client names this program in the gateway's logs; "holdover-answer"
	// when empty.
	Client string
	// Logger gets frames the Client passes over; nil discards them.
	Logger *slog.Logger
}

// Welcome is what the gateway said to hello.
type Welcome struct {
	ClientID string
	User     string
	// Sessions are the Sessions the token grants ("*" for every one).
	Sessions []string
}

// writeTimeout bounds writing one frame. A write that cannot finish in it
// means the connection is broken; the library then closes it.
const writeTimeout = 10 * time.Second

// readLimit bounds one frame from the gateway: a history batch is at most
// 256 KiB, and a view of a Session with many questions may be larger.
const readLimit = 16 << 20

// Conn is one WebSocket connection to the gateway, speaking the generic
// verbs of docs/protocol.md: watch, call, open/close, and the outcomes of
// forwarded requests. One goroutine reads frames and routes them by id;
// any goroutine may send.
type Conn struct {
	ws      *websocket.Conn
	log     *slog.Logger
	welcome Welcome
	done    chan struct{} // closed when the connection has ended

	mu       sync.Mutex
	nextID   int
	calls    map[string]chan callReply
	streams  map[string]*Stream
	sessions map[string]*Session // by watch id
	requests map[string]*Request // live forwarded requests, by request id
	err      error               // why the connection ended
}

type callReply struct {
	result json.RawMessage
	err    error
}

// dialTimeout bounds connecting and the hello handshake together.
const dialTimeout = 10 * time.Second

// Dial connects to the gateway, says hello and waits for welcome. A token
// the gateway refuses is UNAUTHORIZED; a gateway that cannot be reached is
// UNAVAILABLE.
func Dial(ctx context.Context, cfg Config) (*Conn, error) {
	addr, err := wsURL(cfg.Gateway)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, addr, nil)
	if err != nil {
		return nil, holdover.Newf(clientwire.CodeUnavailable, "cannot reach the gateway at %s: %v", cfg.Gateway, err)
	}
	ws.SetReadLimit(readLimit)
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Conn{
		ws: ws, log: log, done: make(chan struct{}),
		calls:    make(map[string]chan callReply),
		streams:  make(map[string]*Stream),
		sessions: make(map[string]*Session),
		requests: make(map[string]*Request),
	}
	name := cfg.Client
	if name == "" {
		name = "holdover-answer"
	}
	if err := c.send(clientwire.HelloFrame{Type: clientwire.TypeHello, Protocol: clientwire.ProtocolVersion, Client: name, Token: cfg.Token}); err != nil {
		_ = ws.CloseNow()
		return nil, err
	}
	welcome, rest, err := c.readWelcome(ctx)
	if err != nil {
		_ = ws.CloseNow()
		return nil, err
	}
	c.welcome = welcome
	go c.readLoop(rest)
	return c, nil
}

// wsURL turns the gateway's address into its WebSocket endpoint.
func wsURL(gateway string) (string, error) {
	u, err := url.Parse(gateway)
	if err != nil || u.Host == "" {
		return "", holdover.Newf(holdover.CodeBadRequest, "gateway address %q is not a URL like http://127.0.0.1:8080", gateway)
	}
	switch u.Scheme {
	case "http", "ws":
		u.Scheme = "ws"
	case "https", "wss":
		u.Scheme = "wss"
	default:
		return "", holdover.Newf(holdover.CodeBadRequest, "gateway address %q must start with http://, https://, ws:// or wss://", gateway)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/ws"
	}
	return u.String(), nil
}

// readWelcome reads frames until welcome, or the error that refuses the
// connection.
// Frames that shared the welcome's message come back as rest, for the
// read loop to route first.
func (c *Conn) readWelcome(ctx context.Context) (welcome Welcome, rest []json.RawMessage, err error) {
	for {
		_, data, err := c.ws.Read(ctx)
		if err != nil {
			return Welcome{}, nil, holdover.Wrap(err, clientwire.CodeUnavailable, "the gateway closed the connection before welcome")
		}
		frames, err := clientwire.SplitMessage(data)
		if err != nil {
			return Welcome{}, nil, err
		}
		for i, data := range frames {
			f, err := clientwire.ReadGatewayFrame(data)
			if err != nil {
				return Welcome{}, nil, err
			}
			switch f := f.(type) {
			case clientwire.WelcomeFrame:
				return Welcome{ClientID: f.ClientID, User: f.User, Sessions: f.Sessions}, frames[i+1:], nil
			case clientwire.ErrorFrame:
				if f.ID == "" {
					return Welcome{}, nil, holdover.New(f.Code, f.Message)
				}
			}
		}
	}
}

// Welcome is what the gateway answered hello with.
func (c *Conn) Welcome() Welcome { return c.welcome }

// Done is closed when the connection has ended; Err then says why.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err is why the connection ended, or nil while it lasts.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close tears the Client down as the web Client's page unload does (W4):
// each forwarded request it has not answered releases its claim and is
// then delegated, so the Host can pass it on. Then the socket closes.
func (c *Conn) Close() {
	c.mu.Lock()
	held := make([]*Request, 0, len(c.requests))
	for _, r := range c.requests {
		held = append(held, r)
	}
	c.mu.Unlock()
	for _, r := range held {
		r.teardown()
	}
	c.end(holdover.New(clientwire.CodeUnavailable, "this Client closed its connection to the gateway"))
	_ = c.ws.Close(websocket.StatusNormalClosure, "client closed") // the gateway drops what is left of a socket that goes
}

// Call calls an RPC method and decodes its result into result (unless nil).
// The gateway's and the service's errors come back with their codes.
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	reply := make(chan callReply, 1)
	id, err := c.register("c", func(id string) { c.calls[id] = reply })
	if err != nil {
		return err
	}
	defer c.forget(func() { delete(c.calls, id) })
	raw, err := encodeParams(method, params)
	if err != nil {
		return err
	}
	if err := c.send(clientwire.CallFrame{Type: clientwire.TypeCall, ID: id, Method: method, Params: raw}); err != nil {
		return err
	}
	select {
	case r := <-reply:
		if r.err != nil {
			return r.err
		}
		if result == nil {
			return nil
		}
		if err := json.Unmarshal(r.result, result); err != nil {
			return holdover.Newf(clientwire.CodeBadFrame, "the result of %s does not decode: %v", method, err)
		}
		return nil
	case <-c.done:
		return c.Err()
	case <-ctx.Done():
		return holdover.Newf(clientwire.CodeUnavailable, "%s: %v", method, ctx.Err())
	}
}

// Answer sends a late answer to a continued call through the late-answer
// RPC (D6, C3). Accepted false means the call is unknown or not
// continued; Reason says which.
func (c *Conn) Answer(ctx context.Context, sid, callID string, answers []holdover.Answer) (holdover.AnswerResult, error) {
	var res holdover.AnswerResult
	err := c.Call(ctx, clientwire.MethodAnswer, holdover.AnswerRequest{Session: sid, CallID: callID, Answers: answers}, &res)
	return res, err
}

// Stream is an open Remote stream: the gateway's frames, then its end.
type Stream struct {
	c      *Conn
	id     string
	frames chan json.RawMessage
	done   chan struct{}

	onEnd func() // runs once the stream has ended; may be nil

	mu     sync.Mutex
	err    error
	closed bool
}

// streamBuffer is how many frames of a stream may wait for its reader.
// attachWait sends one, and perhaps the Host's closing one.
const streamBuffer = 8

// open starts the Remote stream named by method; onEnd, when set, runs
// once it has ended.
func (c *Conn) open(method string, params any, onEnd func()) (*Stream, error) {
	raw, err := encodeParams(method, params)
	if err != nil {
		return nil, err
	}
	s := &Stream{c: c, frames: make(chan json.RawMessage, streamBuffer), done: make(chan struct{}), onEnd: onEnd}
	id, err := c.register("s", func(id string) { s.id = id; c.streams[id] = s })
	if err != nil {
		return nil, err
	}
	if err := c.send(clientwire.OpenFrame{Type: clientwire.TypeOpen, ID: id, Method: method, Params: raw}); err != nil {
		c.forget(func() { delete(c.streams, id) })
		return nil, err
	}
	return s, nil
}

// Frames delivers the stream's frames in order.
func (s *Stream) Frames() <-chan json.RawMessage { return s.frames }

// Done is closed when the stream has ended, from either side.
func (s *Stream) Done() <-chan struct{} { return s.done }

// Err is why the gateway ended the stream: nil for a clean close.
func (s *Stream) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close ends the stream from this side. Once either side has closed it,
// nothing more flows, so closing twice sends one close frame.
func (s *Stream) Close() {
	if s.end(nil) {
		_ = s.c.send(clientwire.CloseFrame{Type: clientwire.TypeClose, ID: s.id})
	}
	s.c.forget(func() { delete(s.c.streams, s.id) })
}

// end marks the stream ended; it reports whether this call ended it.
func (s *Stream) end(err error) bool {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return false
	}
	s.closed, s.err = true, err
	close(s.done)
	s.mu.Unlock()
	if s.onEnd != nil {
		s.onEnd()
	}
	return true
}

// deliver hands a frame to the stream's reader. A reader that falls more
// than streamBuffer frames behind loses the stream: nothing the Client
// reads needs more.
func (s *Stream) deliver(data json.RawMessage) {
	select {
	case <-s.done:
	case s.frames <- data:
	default:
		s.end(holdover.New(holdover.CodeInternal, "the stream's reader fell behind"))
	}
}

// register stores what add keeps under a new id with prefix, unless the
// connection has ended. The web Client names ids w1, c2, s3 … from one
// counter; so does this one.
func (c *Conn) register(prefix string, add func(id string)) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return "", c.err
	}
	c.nextID++
	id := prefix + strconv.Itoa(c.nextID)
	add(id)
	return id, nil
}

func (c *Conn) forget(drop func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	drop()
}

// encodeParams renders the params of a call or stream of method.
func encodeParams(method string, params any) (json.RawMessage, error) {
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, holdover.Newf(holdover.CodeInternal, "encode the params of %s: %v", method, err)
	}
	return raw, nil
}

// send writes one frame.
func (c *Conn) send(f clientwire.ClientFrame) error {
	data, err := json.Marshal(f)
	if err != nil {
		return holdover.Newf(holdover.CodeInternal, "encode a %s frame: %v", f.FrameType(), err)
	}
	// A cancelled write closes the connection, so it runs on a context of
	// its own rather than the caller's.
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	if err := c.ws.Write(ctx, websocket.MessageText, data); err != nil {
		return holdover.Newf(clientwire.CodeUnavailable, "send to the gateway: %v", err)
	}
	return nil
}

// readLoop routes the frames read with the welcome, then reads and routes
// frames until the connection ends.
func (c *Conn) readLoop(frames []json.RawMessage) {
	for {
		for _, data := range frames {
			f, err := clientwire.ReadGatewayFrame(data)
			if err != nil {
				c.log.Warn("passed over a frame from the gateway", "err", err)
				continue
			}
			c.route(f)
		}
		_, data, err := c.ws.Read(context.Background())
		if err != nil {
			c.end(closeError(err))
			return
		}
		if frames, err = clientwire.SplitMessage(data); err != nil {
			c.log.Warn("passed over a message from the gateway", "err", err)
		}
	}
}

// closeError says why the socket ended.
func closeError(err error) error {
	switch websocket.CloseStatus(err) {
	case clientwire.CloseUnauthorized:
		return holdover.New(clientwire.CodeUnauthorized, "the gateway refused the token and closed the connection")
	case -1:
		return holdover.Newf(clientwire.CodeUnavailable, "the connection to the gateway broke: %v", err)
	}
	return holdover.Newf(clientwire.CodeUnavailable, "the gateway closed the connection: %v", err)
}

// route hands one frame to what its id names. Frames this Client has no
// use for (a welcome again, the events of a watch, an inbox's summary)
// and types this version does not know (nil) are passed over.
func (c *Conn) route(f clientwire.GatewayFrame) {
	switch f := f.(type) {
	case clientwire.ReadyFrame:
		if s := c.session(f.ID); s != nil {
			s.onReady()
		}
	case clientwire.ViewFrame:
		if s := c.session(f.ID); s != nil {
			s.onView(f.View)
		}
	case clientwire.RequestFrame:
		c.onRequest(f)
	case clientwire.CancelFrame:
		c.onCancel(f)
	case clientwire.StreamFrame:
		if s := c.stream(f.ID); s != nil {
			if closedFrame(f.Data) {
				c.closeStream(s, nil) // the Host's closing message is the close
				return
			}
			s.deliver(f.Data)
		}
	case clientwire.ClosedFrame:
		if s := c.stream(f.ID); s != nil {
			var err error
			if f.Error != nil {
				err = holdover.New(f.Error.Code, f.Error.Message)
			}
			c.closeStream(s, err)
		}
	case clientwire.ResultFrame:
		c.reply(f.ID, callReply{result: f.Result})
	case clientwire.ErrorFrame:
		c.onError(f)
	}
}

// closedFrame reports whether a stream frame is the Host's closing message.
func closedFrame(data json.RawMessage) bool {
	var v struct {
		Closed bool `json:"closed"`
	}
	return json.Unmarshal(data, &v) == nil && v.Closed
}

func (c *Conn) closeStream(s *Stream, err error) {
	s.end(err)
	c.forget(func() { delete(c.streams, s.id) })
}

func (c *Conn) session(id string) *Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessions[id]
}

func (c *Conn) stream(id string) *Stream {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.streams[id]
}

func (c *Conn) reply(id string, r callReply) bool {
	c.mu.Lock()
	ch, ok := c.calls[id]
	delete(c.calls, id)
	c.mu.Unlock()
	if ok {
		ch <- r
	}
	return ok
}

// onError routes an error frame to the call, stream, watch or request it
// names; one naming nothing concerns the connection.
func (c *Conn) onError(f clientwire.ErrorFrame) {
	err := holdover.New(f.Code, f.Message)
	if f.ID == "" {
		c.log.Warn("the gateway reported an error", "code", f.Code, "message", f.Message)
		return
	}
	if c.reply(f.ID, callReply{err: err}) {
		return
	}
	if s := c.stream(f.ID); s != nil {
		c.closeStream(s, err)
		return
	}
	if s := c.session(f.ID); s != nil {
		s.onError(err)
		return
	}
	c.mu.Lock()
	r := c.requests[f.ID]
	c.mu.Unlock()
	if r != nil {
		r.refused(err)
		return
	}
	c.log.Warn("the gateway reported an error about something this Client does not hold", "id", f.ID, "code", f.Code, "message", f.Message)
}

// end closes everything the connection carried.
func (c *Conn) end(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	calls, streams, sessions, requests := c.calls, c.streams, c.sessions, c.requests
	c.calls, c.streams, c.sessions, c.requests = map[string]chan callReply{}, map[string]*Stream{}, map[string]*Session{}, map[string]*Request{}
	close(c.done)
	c.mu.Unlock()
	for _, ch := range calls {
		ch <- callReply{err: err}
	}
	for _, s := range streams {
		s.end(err)
	}
	for _, r := range requests {
		r.end(reasonGone)
	}
	for _, s := range sessions {
		s.onError(err)
	}
}
