package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/clientwire"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/sessionlog"
	"github.com/holdover-dev/holdover/streams"
)

// FeedInactiveThreshold is how long NATS keeps a Session feed's ordered
// consumers after the gateway is gone. Without it they would linger five
// minutes (DESIGN.md, measured facts).
const FeedInactiveThreshold = 10 * time.Second

// hubs holds one hub per watched Session.
type hubs struct {
	s  *Server
	mu sync.Mutex
	m  map[string]*hub

	topoMu   sync.Mutex
	log      *sessionlog.Log
	sessions jetstream.Stream
	views    jetstream.Stream
}

func newHubs(s *Server) *hubs { return &hubs{s: s, m: make(map[string]*hub)} }

// hub is a Session's shared feed: one ordered consumer on its events, one
// on its projection, and one follow of each service's Remote Events,
// fanned out to every watch of the Session on this gateway. However many
// Clients watch a Session, NATS serves it to the gateway once.
type hub struct {
	s      *Server
	sid    string
	ctx    context.Context
	cancel context.CancelFunc
	refs   int // guarded by hubs.mu

	ready chan struct{} // closed when start has finished
	err   error         // why start failed; read after ready
	stops []func()      // undo start, in reverse; read after ready

	mu      sync.Mutex
	watches map[*watch]struct{}
	conns   map[*conn]int // watches per connection
	// view is the Session's projection once known (viewKnown); nil when
	// the bucket has no value for the Session, which Clients get as null.
	view      json.RawMessage
	viewKnown bool
	viewed    chan struct{} // closed once viewKnown is set
	live      map[string]liveRequest
}

// liveRequest is a Remote Event request and its encoded frame.
type liveRequest struct {
	req   Request
	frame []byte
}

// join adds w to its Session's hub, starting the hub if w is its first
// watch. It returns once the hub is live or has failed to start.
func (hs *hubs) join(ctx context.Context, w *watch) (*hub, error) {
	hs.mu.Lock()
	h, ok := hs.m[w.sid]
	if !ok {
		h = &hub{
			s:       hs.s,
			sid:     w.sid,
			ready:   make(chan struct{}),
			watches: make(map[*watch]struct{}),
			conns:   make(map[*conn]int),
			viewed:  make(chan struct{}),
			live:    make(map[string]liveRequest),
		}
		h.ctx, h.cancel = context.WithCancel(hs.s.ctx)
		hs.m[w.sid] = h
		hs.s.m.sessions.Inc()
		go h.start()
	}
	h.refs++
	hs.mu.Unlock()

	select {
	case <-h.ready:
	case <-ctx.Done():
		hs.release(h)
		return nil, ctx.Err()
	}
	if h.err != nil {
		hs.release(h)
		return nil, h.err
	}
	h.add(w)
	return h, nil
}

// release gives up one reference to h; the last one stops it.
func (hs *hubs) release(h *hub) {
	hs.mu.Lock()
	h.refs--
	last := h.refs == 0
	if last {
		delete(hs.m, h.sid)
		hs.s.m.sessions.Dec()
	}
	hs.mu.Unlock()
	if last {
		h.stop()
	}
}

// topology looks up the streams the hubs read, once it can.
func (hs *hubs) topology(ctx context.Context) (*sessionlog.Log, jetstream.Stream, jetstream.Stream, error) {
	hs.topoMu.Lock()
	defer hs.topoMu.Unlock()
	if hs.log != nil {
		return hs.log, hs.sessions, hs.views, nil
	}
	js := hs.s.cfg.JetStream
	sessions, err := js.Stream(ctx, streams.SessionsStream)
	if err != nil {
		return nil, nil, nil, holdover.Newf(clientwire.CodeUnavailable, "look up stream %s (is the topology provisioned?): %v", streams.SessionsStream, err)
	}
	views, err := js.Stream(ctx, kvStream)
	if err != nil {
		return nil, nil, nil, holdover.Newf(clientwire.CodeUnavailable, "look up bucket %s (is the topology provisioned?): %v", streams.QuestionsBucket, err)
	}
	hs.log, hs.sessions, hs.views = sessionlog.New(js, sessions), sessions, views
	return hs.log, hs.sessions, hs.views, nil
}

// The projection bucket as the stream behind it: a hub reads one key with
// an ordered consumer, so it can bound the consumer's life.
const (
	kvStream     = streams.KVStreamPrefix + streams.QuestionsBucket
	kvSubjectPfx = streams.KVSubjectPrefix + streams.QuestionsBucket + "."
	kvOperation  = "KV-Operation"
	startTimeout = 10 * time.Second // bounds opening a hub's feeds
)

// start opens the hub's feeds. Each one it opens is undone by stop.
func (h *hub) start() {
	defer close(h.ready)
	ctx, cancel := context.WithTimeout(h.ctx, startTimeout)
	defer cancel()
	h.err = h.open(ctx)
	if h.err != nil {
		h.undo()
	}
}

func (h *hub) open(ctx context.Context) error {
	log, sessions, views, err := h.s.hubs.topology(ctx)
	if err != nil {
		return err
	}
	subject, err := streams.EventsSubject(h.sid)
	if err != nil {
		return err
	}
	// Start right after the Session's last event: whatever is appended
	// from now on is delivered, and a watch reads what came before.
	last, err := log.Last(ctx, h.sid)
	if err != nil {
		return err
	}
	if err := h.consume(ctx, sessions, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{subject},
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:    last + 1,
	}, h.onEvent); err != nil {
		return err
	}
	if err := h.consume(ctx, views, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{kvSubjectPfx + h.sid},
		DeliverPolicy:  jetstream.DeliverLastPerSubjectPolicy,
	}, h.onView); err != nil {
		return err
	}
	if err := h.awaitView(ctx, views); err != nil {
		return err
	}
	for _, svc := range h.s.services {
		if svc.Events == nil {
			continue
		}
		f, err := svc.Events.Follow(ctx, h.sid, h)
		if err != nil {
			return err
		}
		h.stops = append(h.stops, func() {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(h.ctx), h.s.lim.CallTimeout)
			defer cancel()
			if err := f.Close(ctx); err != nil {
				h.s.log.Warn("stop following Remote Events", "session", h.sid, "service", svc.Name, "err", err)
			}
		})
	}
	return nil
}

// awaitView returns once the hub knows the Session's projection, so a
// watch that joins gets it before it is ready: the value the view feed
// delivers, or none when the bucket holds no value for the Session (a
// Session with no question events folded yet). The feed was opened first,
// so a value written after the look-up still arrives through it.
func (h *hub) awaitView(ctx context.Context, views jetstream.Stream) error {
	last, err := views.GetLastMsgForSubject(ctx, kvSubjectPfx+h.sid)
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		h.knowView(nil)
	case err != nil:
		return holdover.Newf(clientwire.CodeUnavailable, "projection of Session %s: %v", h.sid, err)
	case last.Header.Get(kvOperation) != "":
		h.knowView(nil) // deleted or purged: no projection until the next write
	}
	select {
	case <-h.viewed:
		return nil
	case <-ctx.Done():
		return holdover.Newf(clientwire.CodeUnavailable, "projection of Session %s did not arrive: %v", h.sid, ctx.Err())
	}
}

// knowView records that the Session has no projection, unless the feed
// has delivered one meanwhile.
func (h *hub) knowView(view json.RawMessage) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.viewKnown {
		h.setView(view)
	}
}

// setView records the Session's projection and sends it to every watch.
// h.mu is held.
func (h *hub) setView(view json.RawMessage) {
	if !h.viewKnown {
		h.viewKnown = true
		close(h.viewed)
	}
	h.view = view
	for w := range h.watches {
		w.sendView(view)
	}
}

// consume starts an ordered consumer with the feed's inactive threshold.
func (h *hub) consume(ctx context.Context, s jetstream.Stream, cfg jetstream.OrderedConsumerConfig, handle func(jetstream.Msg)) error {
	cfg.InactiveThreshold = FeedInactiveThreshold
	cons, err := s.OrderedConsumer(ctx, cfg)
	if err != nil {
		return holdover.Newf(clientwire.CodeUnavailable, "feed of Session %s: %v", h.sid, err)
	}
	cc, err := cons.Consume(handle, jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		if !errors.Is(err, jetstream.ErrConsumerDeleted) && !errors.Is(err, jetstream.ErrNoHeartbeat) {
			h.s.log.Debug("session feed", "session", h.sid, "err", err)
		}
	}))
	if err != nil {
		return holdover.Newf(clientwire.CodeUnavailable, "feed of Session %s: %v", h.sid, err)
	}
	h.stops = append(h.stops, cc.Stop)
	return nil
}

// stop ends the hub once its last watch has left.
func (h *hub) stop() {
	h.cancel()
	<-h.ready
	if h.err == nil {
		h.undo()
	}
}

func (h *hub) undo() {
	for i := len(h.stops) - 1; i >= 0; i-- {
		h.stops[i]()
	}
	h.stops = nil
}

// add makes w one of the hub's watches. It sends w the latest view and,
// if w's connection had no watch of the Session yet, the live requests.
func (h *hub) add(w *watch) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.watches[w] = struct{}{}
	h.conns[w.c]++
	if h.viewKnown {
		w.sendView(h.view)
	}
	if h.conns[w.c] == 1 {
		for _, lr := range h.live {
			w.c.offerRequest(h.sid, lr.req, lr.frame)
		}
	}
}

// remove takes w out and reports whether it was its connection's last
// watch of the Session.
func (h *hub) remove(w *watch) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.watches, w)
	if h.conns[w.c]--; h.conns[w.c] > 0 {
		return false
	}
	delete(h.conns, w.c)
	return true
}

// onEvent fans one Session event out to every watch.
func (h *hub) onEvent(m jetstream.Msg) {
	ev, err := feedEventOf(m)
	if err != nil {
		h.s.log.Warn("session feed: undecodable event passed over", "session", h.sid, "seq", ev.seq, "err", err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for w := range h.watches {
		w.offer(ev)
	}
}

// onView fans a new projection of the Session out to every watch.
func (h *hub) onView(m jetstream.Msg) {
	if op := m.Headers().Get(kvOperation); op != "" {
		// A delete or purge (an operator rebuilding the projection): the
		// next write brings the view again. Clients keep the one they have
		// meanwhile, so their cards and drafts are not cleared (C5).
		return
	}
	// The bucket holds the view indented for operators; Clients get it
	// compact.
	var buf bytes.Buffer
	if err := json.Compact(&buf, m.Data()); err != nil {
		h.s.log.Warn("session feed: projection is not JSON; passed over", "session", h.sid, "err", err)
		h.knowView(nil) // a watch starting now shows none rather than wait for one
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.setView(buf.Bytes())
}

// Request forwards a Remote Event request to every connection watching
// the Session.
func (h *hub) Request(r Request) {
	start := time.Now()
	frame := encodeFrame(clientwire.RequestFrame{Type: clientwire.TypeRequest, ID: r.ID(), Session: h.sid, Event: r.Event(), Payload: r.Payload()})
	h.mu.Lock()
	h.live[r.ID()] = liveRequest{req: r, frame: frame}
	for c := range h.conns {
		c.offerRequest(h.sid, r, frame)
	}
	h.mu.Unlock()
	h.s.m.fanOut.Observe(time.Since(start).Seconds())
}

// End tells every connection holding request id that it is over.
func (h *hub) End(id, reason string) {
	frame := encodeFrame(clientwire.CancelFrame{Type: clientwire.TypeCancel, ID: id, Session: h.sid, Reason: reason})
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.live, id)
	for c := range h.conns {
		c.endRequest(id, frame)
	}
}

// feedEvent is one Session event as the feed delivers it. Data is nil for
// an event that does not decode: it is passed over, but its seq still
// counts, so the next event does not look like a gap.
type feedEvent struct {
	seq     uint64
	prev    uint64
	hasPrev bool
	data    []byte
}

func feedEventOf(m jetstream.Msg) (feedEvent, error) {
	e, seq, err := sessionlog.DecodeMsg(m)
	ev := feedEvent{seq: seq}
	ev.prev, ev.hasPrev = sessionlog.Prev(m.Headers())
	if err != nil {
		return ev, err
	}
	ev.data = encodeEvent(e)
	return ev, nil
}

// encodeEvent renders a Session event as Clients see it. Data came from
// the log as JSON, so it encodes; if it ever did not, the event goes out
// without it rather than not at all, so its seq still counts.
func encodeEvent(e events.Event) []byte {
	ev := clientwire.SessionEvent{Seq: e.Seq, Type: string(e.Type), At: e.At, Data: e.Data}
	data, err := json.Marshal(ev)
	if err != nil {
		ev.Data = nil
		data, _ = json.Marshal(ev)
	}
	return data
}
