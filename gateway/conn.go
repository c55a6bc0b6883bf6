package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/time/rate"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/clientwire"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/strictjson"
)

// conn is one Client's WebSocket. Its read loop handles frames in order;
// everything it sends goes through one queue, bounded in frames and in
// bytes, to one writer, so frames to a Client never interleave and a slow
// Client never holds up a Session's other Clients nor grows the gateway:
// when a live frame finds its queue full, or a write waits too long, it is
// disconnected.
type conn struct {
	s       *Server
	ws      *websocket.Conn
	id      string
	log     *slog.Logger
	limiter *rate.Limiter
	// urlToken is the token of the /ws?token= address, checked at hello.
	urlToken string
	// authenticated counts the connection out of those that have not
	// said hello (once; the server calls it again when the socket ends).
	authenticated func()

	ctx    context.Context
	cancel context.CancelFunc
	out    chan []byte
	wrote  chan struct{} // closed when the writer has stopped
	closed chan struct{} // closed when the socket is

	// grant is set by hello, before any goroutine that reads it starts,
	// and so are the token's share of its limits and the expiry timer.
	grant Grant
	said  atomic.Bool // hello went through
	// helloDue closes a connection that has not said hello in time; a
	// hello that goes through stops it.
	helloDue *time.Timer
	tokenUse *tokenUse
	expiry   *time.Timer
	// protocol is the version spoken on the connection, set by hello; the
	// writer reads it to know whether it may batch frames.
	protocol atomic.Int32

	// What waits in out, guarded by qmu, under which every frame enters
	// it: qbytes are its bytes, and room is a channel closed (and
	// forgotten) when the writer takes a frame while a history waits for
	// room.
	qmu     sync.Mutex
	qbytes  int
	room    chan struct{}
	qclosed bool        // teardown has counted the queue out
	slow    atomic.Bool // the Client was closed as too slow (counted once)
	// historyTurn is held by the watch whose history is being read: one
	// at a time, so a Client that reads slowly costs one page of history
	// however many Sessions it watches.
	historyTurn chan struct{}

	closeOnce   sync.Once
	closeStatus websocket.StatusCode
	closeReason string

	mu       sync.Mutex
	watches  map[string]*watch
	requests map[string]*heldRequest
	streams  map[string]context.CancelFunc
	calls    int
	ending   bool           // teardown has begun: no new tasks
	tasks    sync.WaitGroup // watch catch-ups, streams and calls in progress
}

// heldRequest is a Remote Event request forwarded to this Client that has
// not ended; answered is set once the Client's outcome went through.
type heldRequest struct {
	sid      string
	req      Request
	answered bool
}

// closeAfterFlush is the marker, queued behind the frames already queued,
// that makes the writer close the connection.
var closeAfterFlush = []byte(nil)

func newConn(s *Server, ws *websocket.Conn, id, remote, urlToken string) *conn {
	c := &conn{
		s:           s,
		ws:          ws,
		id:          id,
		log:         s.log.With("client", id, "remote", remote),
		limiter:     rate.NewLimiter(rate.Limit(s.lim.FramesPerSecond), s.lim.Burst),
		urlToken:    urlToken,
		out:         make(chan []byte, s.lim.SendQueue),
		historyTurn: make(chan struct{}, 1),
		wrote:       make(chan struct{}),
		closed:      make(chan struct{}),
		watches:     make(map[string]*watch),
		requests:    make(map[string]*heldRequest),
		streams:     make(map[string]context.CancelFunc),
	}
	c.ctx, c.cancel = context.WithCancel(s.ctx)
	// Reads run without a context: cancelling one would drop the socket
	// without a close frame. Ending the context closes the socket
	// properly instead, and that ends the read.
	context.AfterFunc(c.ctx, c.closeSocket)
	return c
}

// run serves the connection until it closes, then tears it down.
func (c *conn) run() {
	c.s.m.connections.Inc()
	defer c.s.m.connections.Dec()
	go c.writeLoop()
	c.helloDue = time.AfterFunc(c.s.lim.HelloTimeout, func() {
		if !c.said.Load() {
			c.closeWith(clientwire.CloseUnauthorized, holdover.New(clientwire.CodeUnauthorized, "no hello frame arrived in time"))
		}
	})
	c.readLoop()
	c.helloDue.Stop()
	c.teardown()
}

// readLoop reads and takes frames until the connection ends.
func (c *conn) readLoop() {
	for {
		typ, r, err := c.ws.Reader(context.Background())
		if err != nil {
			c.abort(websocket.StatusNormalClosure, "")
			return
		}
		f, err := c.readFrame(typ, r)
		if errors.Is(err, errConnection) {
			return
		}
		limited, ended := c.pace(f)
		switch {
		case ended:
			return
		case limited != nil:
			c.fail(f.head.ID, limited)
		case err != nil:
			c.fail(f.head.ID, err)
		default:
			c.take(f)
		}
	}
}

// errConnection marks a read that ended the connection.
var errConnection = errors.New("connection ended")

// readFrame reads one frame to its end and parses it. A frame over the
// size limit is read and dropped, so the next one starts where it should;
// only one beyond the library's hard limit ends the connection.
func (c *conn) readFrame(typ websocket.MessageType, r io.Reader) (frame, error) {
	limit := c.s.lim.MaxFrameBytes
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		c.abort(websocket.StatusNormalClosure, "")
		return frame{}, errConnection
	}
	if int64(len(data)) > limit {
		n, err := io.Copy(io.Discard, r)
		if err != nil {
			c.abort(websocket.StatusMessageTooBig, "frame too large")
			return frame{}, errConnection
		}
		return frame{}, holdover.Newf(clientwire.CodeFrameTooLarge, "frame is %d bytes, over the %d byte limit; it was dropped", int64(len(data))+n, limit)
	}
	if typ != websocket.MessageText {
		return frame{}, holdover.New(holdover.CodeBadRequest, "frames are JSON text, not binary")
	}
	f, err := parseFrame(data)
	if err == nil {
		c.s.m.frames.WithLabelValues(f.label()).Inc()
	}
	return f, err
}

// pace takes one frame's share of the connection's rate and of its
// token's, as its spec's pace says: a frame that starts something is
// refused (RATE_LIMITED) when no share is left, one that releases waits
// for its share. ended reports that the connection ended while it waited.
func (c *conn) pace(f frame) (limited error, ended bool) {
	if f.spec != nil && f.spec.pace == releases {
		if c.limiter.Wait(c.ctx) != nil {
			return nil, true
		}
		if c.tokenUse != nil && c.tokenUse.limiter.Wait(c.ctx) != nil {
			return nil, true
		}
		return nil, false
	}
	if !c.limiter.Allow() {
		return holdover.Newf(clientwire.CodeRateLimited, "more than %g frames a second; this frame was dropped", c.s.lim.FramesPerSecond), false
	}
	if !c.tokenAllows() {
		return holdover.Newf(clientwire.CodeRateLimited, "this token's connections sent more than %g frames a second together; this frame was dropped", c.s.lim.TokenFramesPerSecond), false
	}
	return nil, false
}

// take runs a frame its spec's needs admit. One of a type not in the
// table is passed over once the connection has said hello.
func (c *conn) take(f frame) {
	if (f.spec == nil || f.spec.needs > needsNothing) && !c.said.Load() {
		c.fail(f.head.ID, holdover.New(clientwire.CodeUnauthorized, "say hello first"))
		return
	}
	if f.spec == nil {
		return
	}
	s, err := c.scope(f)
	if err != nil {
		c.fail(f.head.ID, err)
		return
	}
	f.spec.handle(c, f.body, s)
}

// scope checks what a frame's needs ask of the token and returns what
// they established.
func (c *conn) scope(f frame) (scope, error) {
	switch f.spec.needs {
	case needsSession:
		sid := f.head.Session
		if err := streams.CheckSession(sid); err != nil {
			return scope{}, err
		}
		return scope{session: sid}, c.authorize(sid)
	case needsParamsSession:
		params, sid, err := c.authorizeParams(f.head.Params)
		return scope{session: sid, params: params}, err
	}
	return scope{}, nil
}

// onHello authenticates the connection. A token from the address and one
// in the frame must agree when both are given. A refused hello closes the
// connection: a token does not become right by asking again.
func (c *conn) onHello(f clientwire.HelloFrame, _ scope) {
	if c.said.Load() {
		c.fail("", holdover.New(holdover.CodeBadRequest, "hello was already said on this connection"))
		return
	}
	protocol := min(f.Protocol, clientwire.ProtocolVersion)
	if protocol < clientwire.OldestProtocolVersion {
		c.closeWith(websocket.StatusPolicyViolation, holdover.Newf(holdover.CodeBadRequest, "protocol version %d is not spoken here; this gateway speaks %d to %d",
			f.Protocol, clientwire.OldestProtocolVersion, clientwire.ProtocolVersion))
		return
	}
	token := f.Token
	if token == "" {
		token = c.urlToken
	}
	grant, err := c.s.cfg.Tokens.Authenticate(token)
	if err == nil && f.Token != "" && c.urlToken != "" && f.Token != c.urlToken {
		err = holdover.New(clientwire.CodeUnauthorized, "the token in hello is not the one in the address")
	}
	if err != nil {
		c.closeWith(clientwire.CloseUnauthorized, err)
		return
	}
	if !c.admitToken(grant) {
		return
	}
	c.grant = grant
	c.protocol.Store(int32(protocol))
	c.said.Store(true)
	c.helloDue.Stop()
	c.authenticated()
	c.log = c.log.With("user", grant.User)
	c.send(encodeFrame(clientwire.WelcomeFrame{Type: clientwire.TypeWelcome, Protocol: protocol, ClientID: c.id, User: grant.User, Sessions: grant.Sessions}))
}

// authorize checks that the grant covers Session sid.
func (c *conn) authorize(sid string) error {
	if !c.grant.Allows(sid) {
		return holdover.Newf(clientwire.CodeForbidden, "the token of %s does not grant Session %q", c.grant.User, sid)
	}
	return nil
}

// authorizeParams checks the Session a call or stream names in its params
// and returns the params as the gateway checked them, with that Session
// ("" when they name none). Params that name no Session need a grant of
// every Session.
//
// The backend must read the Session the gateway checked, and no other
// (issue 24). So the params are decoded by exact name, a name given twice
// or two names that differ only in case are refused, as is any name a
// case-folding decoder would read as "session" ("Session", "ſession"),
// and what is forwarded is re-encoded from what was checked, never the
// bytes as they came.
func (c *conn) authorizeParams(params json.RawMessage) (json.RawMessage, string, error) {
	fields, err := strictjson.Members(params)
	if err != nil {
		return nil, "", holdover.Wrap(err, holdover.CodeBadRequest, "params")
	}
	for name := range fields {
		if name != sessionParam && strictjson.Fold(name) == strictjson.Fold(sessionParam) {
			return nil, "", holdover.Newf(holdover.CodeBadRequest, "params.%q is not params.%s: names are exact", name, sessionParam)
		}
	}
	out, err := json.Marshal(fields)
	if err != nil {
		return nil, "", holdover.Newf(holdover.CodeBadRequest, "params: %v", err)
	}
	raw, named := fields[sessionParam]
	if !named {
		if !c.grant.Allows(AllSessions) {
			return nil, "", holdover.Newf(clientwire.CodeForbidden, "the token of %s grants only some Sessions; name one in params.session", c.grant.User)
		}
		return out, "", nil
	}
	var sid string
	if err := json.Unmarshal(raw, &sid); err != nil {
		return nil, "", holdover.New(holdover.CodeBadRequest, "params.session must be a string")
	}
	if err := c.authorize(sid); err != nil {
		return nil, "", err
	}
	return out, sid, nil
}

// sessionParam is the member of a call's or stream's params that names
// its Session.
const sessionParam = "session"

// admit checks, with c.mu held, that id names nothing in held yet and
// that held is below limit: a connection's watches or streams, named in
// the errors as one and many.
func admit[V any](held map[string]V, id string, limit int, one, many string) error {
	if _, dup := held[id]; dup {
		return holdover.Newf(holdover.CodeBadRequest, "%s id %q is already in use on this connection", one, id)
	}
	if len(held) >= limit {
		return holdover.Newf(clientwire.CodeLimit, "this connection already holds %d %s, the limit", limit, many)
	}
	return nil
}

// onSettle, onReject and onDelegate answer the request a frame names.
func (c *conn) onSettle(f clientwire.SettleFrame, _ scope) {
	c.answer(f.ID, func(r Request) error { return r.Settle(f.Value) })
}

func (c *conn) onReject(f clientwire.RejectFrame, _ scope) {
	c.answer(f.ID, func(r Request) error { return r.Reject(f.Error) })
}

func (c *conn) onDelegate(f clientwire.DelegateFrame, _ scope) {
	c.answer(f.ID, func(r Request) error { return r.Delegate(c.ctx) })
}

// answer forwards a Client's outcome to the request id. Each Client
// answers a request once: a second outcome is refused here, so a Client
// cannot flood the Host through a frame the rate limit lets pass. An
// outcome the service refuses (BAD_ANSWER, say) does not count, so the
// Client can try again.
func (c *conn) answer(id string, outcome func(Request) error) {
	c.mu.Lock()
	held, ok := c.requests[id]
	answered := ok && held.answered
	c.mu.Unlock()
	switch {
	case !ok:
		c.fail(id, holdover.Newf(holdover.CodeNotFound, "no request %q is waiting on this connection; it may have ended", id))
		return
	case answered:
		c.fail(id, holdover.Newf(holdover.CodeBadRequest, "request %q was already answered from this connection", id))
		return
	}
	if err := outcome(held.req); err != nil {
		c.fail(id, err)
		return
	}
	c.mu.Lock()
	held.answered = true
	c.mu.Unlock()
}

// offerRequest forwards a request of a watched Session, unless this Client
// already has it.
func (c *conn) offerRequest(sid string, r Request, frame []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, dup := c.requests[r.ID()]; dup {
		return
	}
	c.requests[r.ID()] = &heldRequest{sid: sid, req: r}
	c.send(frame)
}

// endRequest tells the Client a request it was forwarded is over.
func (c *conn) endRequest(id string, frame []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.requests[id]; !ok {
		return
	}
	delete(c.requests, id)
	c.send(frame)
}

// dropRequests forgets the requests of Session sid (every Session when sid
// is empty) and returns those this Client has not answered.
func (c *conn) dropRequests(sid string) []Request {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Request
	for id, held := range c.requests {
		if sid == "" || held.sid == sid {
			if !held.answered {
				out = append(out, held.req)
			}
			delete(c.requests, id)
		}
	}
	return out
}

// delegate passes requests on, as a Client that stops watching must (W4).
func (c *conn) delegate(reqs []Request) {
	if len(reqs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.ctx), c.s.lim.CallTimeout)
	defer cancel()
	for _, r := range reqs {
		if err := r.Delegate(ctx); err != nil {
			c.log.Warn("delegate request", "request", r.ID(), "err", err)
		}
	}
}

// goTask runs f on a goroutine of its own that teardown waits for. It
// reports false, running nothing, once teardown has begun.
func (c *conn) goTask(f func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ending {
		return false
	}
	c.tasks.Add(1)
	go func() {
		defer c.tasks.Done()
		f()
	}()
	return true
}

// closeTooSlow is the close code of a Client that stopped reading.
const closeTooSlow = websocket.StatusPolicyViolation

// send queues a frame without waiting. A Client whose queue has no room,
// in frames or in bytes, has fallen too far behind: it is disconnected,
// and catches up by watching again from the last seq it has.
func (c *conn) send(frame []byte) {
	c.qmu.Lock()
	ok := c.push(frame, pushLive)
	frames, bytes := len(c.out), c.qbytes
	c.qmu.Unlock()
	if !ok && c.ctx.Err() == nil {
		c.tooSlow(fmt.Sprintf("too slow: %d frames (%d bytes) were waiting", frames, bytes))
	}
}

// sendWait queues a frame, waiting for room: for the Client's own bulk
// replies (a watch's history, a page at a time), which must not cost the
// connection. They take only the first half of the queue's bounds, so a
// Client that reads keeps room for what happens live meanwhile. It reports
// false once the connection has ended.
func (c *conn) sendWait(frame []byte) bool {
	for {
		c.qmu.Lock()
		ok := c.push(frame, pushBulk)
		if !ok && c.room == nil {
			c.room = make(chan struct{})
		}
		room := c.room
		c.qmu.Unlock()
		if ok {
			return true
		}
		select {
		case <-room:
		case <-c.ctx.Done():
			return false
		}
	}
}

// pushKind says how much of the queue a frame may take.
type pushKind int

const (
	pushLive  pushKind = iota // up to the bounds
	pushBulk                  // up to half the bounds: a history
	pushFinal                 // the frame bound only: the last frames before a close
)

// push puts frame in the queue when it has room for its kind: while
// fewer than SendQueue frames and SendQueueBytes bytes wait (half of each
// for a bulk frame). The frame itself may go past the byte bound, so a
// large view always has its turn: what waits is at most the bound and
// one frame. c.qmu is held.
func (c *conn) push(frame []byte, kind pushKind) bool {
	frames, bytes := c.s.lim.SendQueue, c.s.lim.SendQueueBytes
	if kind == pushBulk {
		frames, bytes = max(frames/2, 1), bytes/2
	}
	switch {
	case c.qclosed, len(c.out) >= frames:
		return false
	case kind != pushFinal && c.qbytes >= bytes:
		return false
	}
	select {
	case c.out <- frame:
	default:
		return false
	}
	c.qbytes += len(frame)
	c.s.m.queuedBytes.Add(float64(len(frame)))
	return true
}

// took counts frame out of the queue, which the writer has taken, and
// wakes the histories waiting for room.
func (c *conn) took(frame []byte) {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	c.qbytes -= len(frame)
	c.s.m.queuedBytes.Sub(float64(len(frame)))
	if c.room != nil {
		close(c.room)
		c.room = nil
	}
}

// tooSlow disconnects a Client that stopped reading, once.
func (c *conn) tooSlow(reason string) {
	if !c.slow.CompareAndSwap(false, true) {
		return
	}
	c.s.m.dropped.Inc()
	c.log.Warn("client too slow; disconnecting", "reason", reason)
	c.abort(closeTooSlow, reason)
}

// fail tells the Client a frame was refused; the connection goes on.
func (c *conn) fail(id string, err error) {
	c.s.metrics.Error("gateway", err)
	c.send(errorOf(id, err))
}

// closeWith sends err and then closes the connection with status.
func (c *conn) closeWith(status websocket.StatusCode, err error) {
	c.s.metrics.Error("gateway", err)
	c.setClose(status, holdover.Wire(err).Message)
	c.qmu.Lock()
	defer c.qmu.Unlock()
	c.push(errorOf("", err), pushFinal)
	if !c.push(closeAfterFlush, pushFinal) {
		c.cancel()
	}
}

// setClose records the status the connection closes with; the first wins.
func (c *conn) setClose(status websocket.StatusCode, reason string) {
	c.closeOnce.Do(func() {
		if len(reason) > 120 { // a close frame holds at most 123 bytes of reason
			reason = reason[:120]
		}
		c.closeStatus, c.closeReason = status, reason
	})
}

// abort ends the connection now.
func (c *conn) abort(status websocket.StatusCode, reason string) {
	c.setClose(status, reason)
	c.cancel()
}

// closeSocket runs once the connection's context has ended: it closes the
// socket with the recorded status, which also ends the read loop. A write
// under way finishes first, so the close frame follows the frames already
// on their way and a slow Client that reads again learns why it was
// closed; a write still stuck a write timeout later is cut, and the socket
// with it.
func (c *conn) closeSocket() {
	defer close(c.closed)
	c.setClose(websocket.StatusGoingAway, "the gateway is shutting down")
	stuck := time.NewTimer(c.s.lim.WriteTimeout)
	defer stuck.Stop()
	select {
	case <-c.wrote:
	case <-stuck.C:
		c.log.Debug("a write outlived the close; cutting the socket")
		_ = c.ws.CloseNow()
		return
	}
	if err := c.ws.Close(c.closeStatus, c.closeReason); err != nil {
		c.log.Debug("close websocket", "err", err)
	}
}

// writeLoop writes queued frames in order until the connection ends. A
// Client that speaks protocol 2 gets the frames that queued while the last
// message was being written in one message (batch). Nothing waits to be
// batched: a frame alone goes out the moment the writer is free, so one
// request reaches its Clients no later than before, while a burst costs a
// busy connection one write for all it has rather than one per frame.
//
// One timer bounds each write, armed before it and stopped after: a write
// that outlasts Limits.WriteTimeout (a Client that stopped reading) closes
// the connection as too slow. A context per frame did the same at a sixth
// of the writer's time under a burst of requests.
//
// Writes run under no context: the websocket library drops the socket
// without a close frame when a write's context ends. The writer stops
// once the connection's context ends, after the write under way, which
// closeSocket waits for.
func (c *conn) writeLoop() {
	defer close(c.wrote)
	stuck := time.AfterFunc(c.s.lim.WriteTimeout, func() {
		c.tooSlow(fmt.Sprintf("too slow: a write waited %s", c.s.lim.WriteTimeout))
	})
	stuck.Stop()
	defer stuck.Stop()
	for c.ctx.Err() == nil {
		select {
		case frame := <-c.out:
			c.took(frame)
			msg, frames, closing := c.batch(frame)
			if frames > 0 {
				stuck.Reset(c.s.lim.WriteTimeout)
				err := c.ws.Write(context.Background(), websocket.MessageText, msg.data)
				stuck.Stop()
				msg.release()
				if err != nil {
					c.abort(websocket.StatusGoingAway, "write failed")
					return
				}
				c.s.m.sentFrames.Add(float64(frames))
				c.s.m.sentMessages.Inc()
			}
			if closing {
				c.cancel()
				return
			}
		case <-c.ctx.Done():
			return
		}
	}
}

// maxBatchBytes is where a batch stops taking more frames. A frame larger
// than it (a history batch, a big view) still goes out, alone or last.
const maxBatchBytes = 64 << 10

// batch is the message that carries first and, on a protocol 2
// connection, every frame queued behind it up to maxBatchBytes: one frame
// as it is, several as a JSON array. It says how many frames the message
// holds and whether the close marker came among them (it ends the batch;
// frames is 0 when it came first). The frames themselves are shared by
// every Client of a Session and are copied, never changed.
func (c *conn) batch(first []byte) (msg message, frames int, closing bool) {
	if first == nil {
		return message{}, 0, true
	}
	if c.protocol.Load() < clientwire.BatchingProtocol || len(c.out) == 0 {
		return message{data: first}, 1, false
	}
	msg = newMessage()
	msg.data = append(append(msg.data, '['), first...)
	frames = 1
	for len(msg.data) < maxBatchBytes && !closing {
		select {
		case f := <-c.out:
			c.took(f)
			if closing = f == nil; !closing {
				msg.data = append(append(msg.data, ','), f...)
				frames++
			}
		default:
			msg.data = append(msg.data, ']')
			return msg, frames, false
		}
	}
	msg.data = append(msg.data, ']')
	return msg, frames, closing
}

// message is one WebSocket message to write: a frame as queued, or a
// batch in a buffer from batchBuffers, given back once written.
type message struct {
	data []byte
	buf  *[]byte // nil for a frame written as queued
}

// batchBuffers hold batches between writes. Shared by every connection,
// so an idle one keeps no buffer of its own.
var batchBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

func newMessage() message {
	buf := batchBuffers.Get().(*[]byte)
	return message{data: (*buf)[:0], buf: buf}
}

func (m message) release() {
	if m.buf == nil || cap(m.data) > 4*maxBatchBytes {
		return // a batch that held a huge frame is left to the collector
	}
	*m.buf = m.data[:0]
	batchBuffers.Put(m.buf)
}

// teardown runs once the read loop has ended. It releases the Client's
// claims first (its streams end with the connection's context), leaves
// the Session feeds, passes on every request it still holds (W4), and
// waits for the socket to close.
func (c *conn) teardown() {
	defer c.releaseToken()
	c.cancel()
	<-c.wrote
	c.mu.Lock()
	c.ending = true
	c.mu.Unlock()
	c.tasks.Wait()

	c.mu.Lock()
	watches := make([]*watch, 0, len(c.watches))
	for _, w := range c.watches {
		watches = append(watches, w)
	}
	clear(c.watches)
	c.mu.Unlock()
	for _, w := range watches {
		w.stop()
	}
	c.delegate(c.dropRequests(""))

	c.qmu.Lock()
	c.qclosed = true
	c.s.m.queuedBytes.Sub(float64(c.qbytes))
	c.qmu.Unlock()
	<-c.closed
}
