package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/clientwire"
)

// The inbox feed (docs/protocol.md, "The inbox"): one Client's summary of
// every Session its token grants that has questions, without a watch per
// Session. It is one ordered consumer on the projection bucket, filtered to
// the granted keys (every key for a "*" grant: the Sessions the bucket
// knows), starting from the last value of each. Each value goes to the
// Client as the Session's summary: the projection without its settled
// list (which only grows), with the count of settled calls, and the Host
// deadlines of its open calls when a service can tell them. The feed
// sends ready once the values that existed when it started have gone out,
// then keeps sending each Session whose projection changes. It reads the
// projection as the watch does, as data it forwards; it names no question
// field but the calls' callId, status and blocking flag.

// inboxBatch bounds the Sessions of one summary frame.
const inboxBatch = 256

// inboxLookups bounds the deadline look-ups one feed runs at once.
const inboxLookups = 8

// inboxFeed is one open inbox of a connection.
type inboxFeed struct {
	c   *conn
	id  string
	ctx context.Context

	mu      sync.Mutex
	pending map[string][]byte // latest projection per Session not yet summarised
	order   []string          // pending Sessions in arrival order
	initial bool              // the values that existed at the start are still arriving
	wake    chan struct{}
	// version counts each Session's values; a deadline look-up retried
	// later summarises its value again only if no newer one came.
	version map[string]uint64
	retries map[string]int
	// retried are the pending Sessions a retry put back: their summary
	// goes out again only if the look-up now finds a deadline.
	retried map[string]bool
}

// A timed call is recorded (and folded as open) just before its wait
// starts, so a look-up right after the fold may not find its deadline yet:
// it is tried again, a few times, each wait twice the one before (0.2 s
// up to 3.2 s: a loaded worker may take seconds to start the wait).
const (
	deadlineRetries = 5
	deadlineRetry   = 200 * time.Millisecond
)

// onInbox opens the Client's inbox feed. It is held like a Remote stream:
// it counts toward the connection's streams, and close ends it.
func (c *conn) onInbox(f clientwire.InboxFrame, _ scope) {
	c.stream(f.ID, func(ctx context.Context) error {
		feed := &inboxFeed{c: c, id: f.ID, ctx: ctx, pending: make(map[string][]byte), initial: true, wake: make(chan struct{}, 1),
			version: make(map[string]uint64), retries: make(map[string]int), retried: make(map[string]bool)}
		return feed.run()
	})
}

// inboxSubjects are the projection bucket's subjects of the Sessions a grant covers.
func inboxSubjects(g Grant) []string {
	if g.Allows(AllSessions) {
		return []string{kvSubjectPfx + ">"}
	}
	out := make([]string, 0, len(g.Sessions))
	for _, sid := range g.Sessions {
		out = append(out, kvSubjectPfx+sid)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// run follows the bucket until the feed ends.
func (f *inboxFeed) run() error {
	_, _, views, err := f.c.s.hubs.topology(f.ctx)
	if err != nil {
		return err
	}
	cons, err := views.OrderedConsumer(f.ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects:    inboxSubjects(f.c.grant),
		DeliverPolicy:     jetstream.DeliverLastPerSubjectPolicy,
		InactiveThreshold: FeedInactiveThreshold,
	})
	if err != nil {
		return holdover.Wrap(err, clientwire.CodeUnavailable, "inbox feed")
	}
	info, err := cons.Info(f.ctx)
	if err != nil {
		return holdover.Wrap(err, clientwire.CodeUnavailable, "inbox feed")
	}
	if info.NumPending == 0 {
		f.mu.Lock()
		f.initial = false
		f.mu.Unlock()
	}
	cc, err := cons.Consume(f.offer, jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		f.c.s.log.Debug("inbox feed", "err", err)
	}))
	if err != nil {
		return holdover.Wrap(err, clientwire.CodeUnavailable, "inbox feed")
	}
	defer cc.Stop()
	f.mu.Lock()
	ready := !f.initial && len(f.order) == 0
	f.mu.Unlock()
	if ready {
		f.c.send(encodeFrame(clientwire.ReadyFrame{Type: clientwire.TypeReady, ID: f.id}))
	}
	for {
		select {
		case <-f.ctx.Done():
			return nil
		case <-f.wake:
		}
		for {
			batch, retried, done := f.take()
			if len(batch) == 0 {
				break
			}
			if sessions := f.summarise(batch, retried); len(sessions) > 0 {
				f.c.send(encodeFrame(clientwire.SummaryFrame{Type: clientwire.TypeSummary, ID: f.id, Sessions: sessions}))
			}
			if done && !ready {
				ready = true
				f.c.send(encodeFrame(clientwire.ReadyFrame{Type: clientwire.TypeReady, ID: f.id}))
			}
		}
	}
}

// offer takes one projection value from the consumer.
func (f *inboxFeed) offer(m jetstream.Msg) {
	subject := m.Subject()
	sid := subject[len(kvSubjectPfx):]
	var data []byte
	if m.Headers().Get(kvOperation) == "" {
		data = m.Data()
	}
	md, err := m.Metadata()
	f.mu.Lock()
	if _, queued := f.pending[sid]; !queued {
		f.order = append(f.order, sid)
	}
	// A delete or purge (an operator rebuilding the projection) sends
	// nothing, so the Client keeps the summary it has, as a watch keeps
	// its view; a value still pending goes out as it is.
	if data != nil || f.pending[sid] == nil {
		f.pending[sid] = data
	}
	f.version[sid]++
	delete(f.retries, sid)
	delete(f.retried, sid)
	if err == nil && md.NumPending == 0 {
		f.initial = false
	}
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// take removes up to inboxBatch pending Sessions, and reports whether the
// initial values are all among those taken so far.
func (f *inboxFeed) take() (batch map[string][]byte, retried map[string]bool, done bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := min(len(f.order), inboxBatch)
	batch = make(map[string][]byte, n)
	retried = make(map[string]bool)
	for _, sid := range f.order[:n] {
		batch[sid] = f.pending[sid]
		if f.retried[sid] {
			retried[sid] = true
			delete(f.retried, sid)
		}
		delete(f.pending, sid)
	}
	f.order = f.order[n:]
	return batch, retried, !f.initial && len(f.order) == 0
}

// summarise turns projection values into summaries, looking up the Host
// deadlines of Sessions with open calls, a few at a time. A retried
// Session's summary is left out unless a deadline turned up.
func (f *inboxFeed) summarise(batch map[string][]byte, retried map[string]bool) []clientwire.SessionSummary {
	out := make([]clientwire.SessionSummary, 0, len(batch))
	var timed []int            // indexes of summaries with open timed calls
	open := map[int][]string{} // their call ids
	for sid, data := range batch {
		if data == nil {
			continue
		}
		s, calls, err := summaryOf(sid, data)
		if err != nil {
			f.c.s.log.Warn("inbox feed: projection is not a view; passed over", "session", sid, "err", err)
			continue
		}
		if len(calls) > 0 {
			timed = append(timed, len(out))
			open[len(out)] = calls
		}
		out = append(out, s)
	}
	if lookup := f.c.s.deadlines(); lookup != nil && len(timed) > 0 {
		var wg sync.WaitGroup
		gate := make(chan struct{}, inboxLookups)
		for _, i := range timed {
			wg.Add(1)
			gate <- struct{}{}
			go func() {
				defer func() { <-gate; wg.Done() }()
				ctx, cancel := context.WithTimeout(f.ctx, f.c.s.lim.CallTimeout)
				defer cancel()
				d, err := lookup(ctx, out[i].Session)
				if err != nil {
					f.c.s.log.Debug("inbox feed: deadlines", "session", out[i].Session, "err", err)
				}
				out[i].Deadlines = d
			}()
		}
		wg.Wait()
		for _, i := range timed {
			for _, call := range open[i] {
				if _, ok := out[i].Deadlines[call]; !ok {
					f.retry(out[i].Session, batch[out[i].Session])
					break
				}
			}
		}
	}
	out = slices.DeleteFunc(out, func(s clientwire.SessionSummary) bool { return retried[s.Session] && len(s.Deadlines) == 0 })
	slices.SortFunc(out, func(a, b clientwire.SessionSummary) int { return strings.Compare(a.Session, b.Session) })
	return out
}

// retry summarises Session sid's value again a little later, unless a
// newer value comes first or it was retried enough.
func (f *inboxFeed) retry(sid string, data []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.retries[sid]
	if n >= deadlineRetries {
		return
	}
	f.retries[sid] = n + 1
	version := f.version[sid]
	time.AfterFunc(deadlineRetry<<n, func() {
		if f.ctx.Err() != nil {
			return
		}
		f.mu.Lock()
		if f.version[sid] != version {
			f.mu.Unlock()
			return
		}
		if _, queued := f.pending[sid]; !queued {
			f.order = append(f.order, sid)
			f.pending[sid] = data
			f.retried[sid] = true
		}
		f.mu.Unlock()
		select {
		case f.wake <- struct{}{}:
		default:
		}
	})
}

// summaryOf reads a projection value: its active calls as they are, the
// count of its settled ones and its last seq, and the ids of its open
// calls that may have a Host deadline (not the keyed blocking ones, M3).
func summaryOf(sid string, data []byte) (clientwire.SessionSummary, []string, error) {
	var v struct {
		Active  []json.RawMessage `json:"active"`
		Settled []json.RawMessage `json:"settled"`
		LastSeq uint64            `json:"lastSeq"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return clientwire.SessionSummary{}, nil, err
	}
	s := clientwire.SessionSummary{Session: sid, Active: v.Active, Settled: len(v.Settled), LastSeq: v.LastSeq}
	if s.Active == nil {
		s.Active = []json.RawMessage{}
	}
	var open []string
	for i, raw := range v.Active {
		var call struct {
			CallID   string `json:"callId"`
			Status   string `json:"status"`
			Blocking bool   `json:"blocking"`
		}
		if json.Unmarshal(raw, &call) == nil && call.Status == "open" && !call.Blocking {
			open = append(open, call.CallID)
		}
		// Compact: the bucket holds the view indented for operators.
		var buf bytes.Buffer
		if json.Compact(&buf, raw) == nil {
			s.Active[i] = buf.Bytes()
		}
	}
	return s, open, nil
}

// deadlines is the first service's look-up of a Session's Host deadlines, if any has one.
func (s *Server) deadlines() func(ctx context.Context, sid string) (map[string]time.Time, error) {
	for _, svc := range s.services {
		if svc.Deadlines != nil {
			return svc.Deadlines
		}
	}
	return nil
}
