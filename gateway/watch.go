package gateway

import (
	"encoding/json"
	"errors"
	"slices"
	"sync"

	"github.com/holdover-dev/holdover/clientwire"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/sessionlog"
)

// A watch is one Client's view of one Session: its events from a seq on,
// in order and each once, and its projection whenever it changes.
//
// A watch is ready once it is live: its history and the projection have
// gone out and it follows the Session's events, projection and requests.
// It then sends one ready frame, so a Client can tell "caught up" from
// "still loading" (docs/protocol.md).
//
// Every event in the Session log names the seq it was appended after
// (sessionlog.PrevHeader), so a watch can tell a gap from a quiet
// Session. It reads the log up to the present, then takes the hub's live
// events; whenever one names a predecessor it has not sent (the watch has
// just started, or the feed lost events across a reconnect), it reads the
// log again from the last event it sent, holding live events back
// meanwhile. No event is sent twice or out of order, and none is skipped.
type watch struct {
	c   *conn
	id  string
	sid string
	// The frame text before the events list and before the view, with the
	// watch id and Session already encoded, and the whole ready frame.
	eventsHead []byte
	viewHead   []byte
	readyFrame []byte

	mu       sync.Mutex
	after    uint64 // the seq of the last event sent (or passed over)
	catching bool   // a read of the log is under way
	held     []feedEvent
	heldSize int  // bytes of the events in held
	overflow bool // held grew too long and was dropped; read again
	hub      *hub
	stopped  bool
	ready    bool // the ready frame has gone out
}

// maxHeld and maxHeldBytes bound the live events a watch holds back while
// it reads the log; beyond them the watch drops them and reads them from
// the log too.
const (
	maxHeld      = 1024
	maxHeldBytes = 256 << 10
)

// History is read a page at a time and sent in frames of at most this
// many events or bytes, by one watch of a connection at a time: a
// connection whose Client reads slowly holds one page.
const (
	historyEvents = 256
	historyBytes  = 128 << 10
)

func newWatch(c *conn, id, sid string, after uint64) *watch {
	idJSON, _ := json.Marshal(id)   // strings always encode
	sidJSON, _ := json.Marshal(sid) // strings always encode
	head := func(typ string) []byte {
		return slices.Concat([]byte(`{"type":"`+typ+`","id":`), idJSON, []byte(`,"session":`), sidJSON)
	}
	return &watch{c: c, id: id, sid: sid, after: after, catching: true,
		eventsHead: slices.Concat(head(clientwire.TypeEvents), []byte(`,"events":`)),
		viewHead:   slices.Concat(head(clientwire.TypeView), []byte(`,"view":`)),
		readyFrame: slices.Concat(head(clientwire.TypeReady), []byte(`}`))}
}

// onWatch starts watching the Session s, which the token grants: events
// from fromSeq on (all of them when it is 0 or missing) and the
// projection.
func (c *conn) onWatch(f clientwire.WatchFrame, s scope) {
	var after uint64
	if f.FromSeq > 0 {
		after = f.FromSeq - 1
	}
	c.mu.Lock()
	if err := admit(c.watches, f.ID, c.s.lim.MaxWatches, "watch", "watches"); err != nil {
		c.mu.Unlock()
		c.fail(f.ID, err)
		return
	}
	w := newWatch(c, f.ID, s.session, after)
	c.watches[f.ID] = w
	c.mu.Unlock()
	if !c.goTask(w.start) {
		c.dropWatch(w)
	}
}

// onUnwatch ends a watch. An id that is not (or no longer) watched is
// ignored: the watch may have failed and been reported a moment ago.
func (c *conn) onUnwatch(f clientwire.UnwatchFrame, _ scope) {
	c.mu.Lock()
	w := c.watches[f.ID]
	delete(c.watches, f.ID)
	c.mu.Unlock()
	if w != nil {
		w.stop()
	}
}

// dropWatch forgets and stops w after it failed.
func (c *conn) dropWatch(w *watch) {
	c.mu.Lock()
	if c.watches[w.id] == w {
		delete(c.watches, w.id)
	}
	c.mu.Unlock()
	w.stop()
}

// start joins the Session's hub and catches up from the log.
func (w *watch) start() {
	h, err := w.c.s.hubs.join(w.c.ctx, w)
	if err != nil {
		w.c.fail(w.id, err)
		w.c.dropWatch(w)
		return
	}
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		w.leave(h)
		return
	}
	w.hub = h
	w.mu.Unlock()
	w.catchUp()
}

// stop leaves the hub. When it was the connection's last watch of the
// Session, the requests it still holds for it are passed on.
func (w *watch) stop() {
	w.mu.Lock()
	w.stopped = true
	h := w.hub
	w.hub = nil
	w.mu.Unlock()
	if h != nil {
		w.leave(h)
	}
}

func (w *watch) leave(h *hub) {
	if h.remove(w) {
		w.c.delegate(w.c.dropRequests(w.sid))
	}
	w.c.s.hubs.release(h)
}

// offer takes one live event from the hub.
func (w *watch) offer(ev feedEvent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.stopped:
	case w.catching:
		w.hold(ev)
	case ev.seq <= w.after:
		// Already sent: the log read covered it.
	case ev.hasPrev && ev.prev > w.after:
		// A gap: read the log from the last event sent.
		w.catching = true
		w.hold(ev)
		if !w.c.goTask(w.catchUp) {
			w.stopped = true
		}
	default:
		w.sendLive([]feedEvent{ev})
	}
}

func (w *watch) hold(ev feedEvent) {
	if len(w.held) >= maxHeld || w.heldSize+len(ev.data) > maxHeldBytes {
		w.held, w.heldSize, w.overflow = nil, 0, true
		return
	}
	w.held = append(w.held, ev)
	w.heldSize += len(ev.data)
}

// catchUp reads the log after the last event sent, sending it a page at a
// time as the Client takes it, then sends the held live events that follow
// on without a gap. It reads again while a gap remains and the log still
// has more to give.
func (w *watch) catchUp() {
	log, _, _, err := w.c.s.hubs.topology(w.c.ctx)
	if err != nil {
		w.c.fail(w.id, err)
		w.c.dropWatch(w)
		return
	}
	for {
		select {
		case w.c.historyTurn <- struct{}{}:
		case <-w.c.ctx.Done():
			return
		}
		w.mu.Lock()
		after, stopped := w.after, w.stopped
		w.mu.Unlock()
		if stopped {
			<-w.c.historyTurn
			return
		}
		read := false
		err := log.ReadPages(w.c.ctx, w.sid, after, sessionlog.Page{Events: historyEvents, Bytes: historyBytes}, func(evts []events.Event, bad []sessionlog.BadEvent) error {
			read = true
			return w.sendPage(evts, bad)
		})
		<-w.c.historyTurn
		if errors.Is(err, errGone) || w.c.ctx.Err() != nil {
			return
		}
		if err != nil {
			w.c.fail(w.id, err)
			w.c.dropWatch(w)
			return
		}
		w.mu.Lock()
		// When the log gave nothing new, a remaining gap cannot be filled
		// (its events are gone from the stream): go on past it.
		done := w.drainHeld(!read)
		if done {
			w.catching = false
			if !w.ready {
				w.ready = true
				w.c.send(w.readyFrame)
			}
		}
		w.mu.Unlock()
		if done {
			return
		}
	}
}

// errGone ends a read of the log whose watch or connection has ended.
var errGone = errors.New("the connection has ended")

// sendPage sends one page read from the log, waiting for room in the
// connection's queue, and moves after past it.
func (w *watch) sendPage(evts []events.Event, bad []sessionlog.BadEvent) error {
	w.mu.Lock()
	stopped := w.stopped
	w.mu.Unlock()
	if stopped {
		return errGone
	}
	var batch [][]byte
	size := 0
	flush := func() bool {
		if len(batch) == 0 {
			return true
		}
		ok := w.c.sendWait(w.eventsFrame(batch))
		batch, size = batch[:0], 0
		return ok
	}
	last := uint64(0)
	for _, e := range evts {
		data := encodeEvent(e)
		if len(batch) == historyEvents || size+len(data) > historyBytes {
			if !flush() {
				return errGone
			}
		}
		batch = append(batch, data)
		size += len(data)
		last = max(last, e.Seq)
	}
	if !flush() {
		return errGone
	}
	for _, b := range bad {
		w.c.s.log.Warn("watch: undecodable event passed over", "session", w.sid, "seq", b.Seq, "err", b.Err)
		last = max(last, b.Seq)
	}
	w.mu.Lock()
	w.after = max(w.after, last)
	w.mu.Unlock()
	return nil
}

// drainHeld sends the held events that follow the last one sent without a
// gap, or all of them when force is set. It reports whether the watch has
// caught up. w.mu is held.
func (w *watch) drainHeld(force bool) bool {
	held := w.held
	w.held, w.heldSize = nil, 0
	var send []feedEvent
	for i, ev := range held {
		if ev.seq <= w.after {
			continue
		}
		if ev.hasPrev && ev.prev > w.after && !force {
			w.held = held[i:]
			for _, h := range w.held {
				w.heldSize += len(h.data)
			}
			break
		}
		send = append(send, ev)
		w.after = ev.seq
	}
	w.sendLive(send)
	if w.overflow {
		w.overflow = false
		return false
	}
	return len(w.held) == 0
}

// sendLive sends events in one frame and moves after past them. w.mu is held.
func (w *watch) sendLive(evs []feedEvent) {
	var batch [][]byte
	for _, ev := range evs {
		if ev.data != nil {
			batch = append(batch, ev.data)
		}
		w.after = max(w.after, ev.seq)
	}
	if len(batch) > 0 {
		w.c.send(w.eventsFrame(batch))
	}
}

// eventsFrame is an events frame of this watch holding encoded events.
func (w *watch) eventsFrame(evs [][]byte) []byte {
	n := len(w.eventsHead) + 3
	for _, e := range evs {
		n += len(e) + 1
	}
	out := make([]byte, 0, n)
	out = append(out, w.eventsHead...)
	out = append(out, '[')
	for i, e := range evs {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, e...)
	}
	return append(out, ']', '}')
}

// sendView sends the Session's projection.
func (w *watch) sendView(view json.RawMessage) {
	w.c.send(w.viewFrame(view))
}

// viewFrame is a view frame of this watch; nil, when the Session has no
// projection, goes out as null.
func (w *watch) viewFrame(view json.RawMessage) []byte {
	if view == nil {
		view = json.RawMessage("null")
	}
	return slices.Concat(w.viewHead, view, []byte("}"))
}
