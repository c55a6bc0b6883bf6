package gateway

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/answerer"
	"github.com/holdover-dev/holdover/clientwire"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/userquestions"
	"github.com/holdover-dev/holdover/waiter"
)

// This file is the binding of the userQuestions service: the one place in
// the gateway that names it. It fills in a Service table entry; the rest
// of the gateway forwards by rule and knows nothing of questions.

// The userQuestions endpoints Clients may call: the late answer (D6) and
// the projection view. The agent's ask endpoints stay out of their reach.
var userQuestionsCalls = []string{"answer", "view"}

// attachWaitOp is the claim stream (W3): open "userQuestions.attachWait".
const attachWaitOp = "attachWait"

// UserQuestions binds the userQuestions service through the answerer a: RPC
// calls go to its micro-service endpoints, the attachWait stream holds a
// claim of the Client's own, and its waterfall requests are followed per
// watched Session.
func UserQuestions(a *answerer.Client) Service {
	b := &questionsBinding{a: a, live: make(map[waiter.Key]map[string]*liveWait)}
	return Service{
		Name:      userquestions.Name,
		Subjects:  streams.ServicePrefix,
		Calls:     userQuestionsCalls,
		Streams:   map[string]Opener{attachWaitOp: b.attachWait},
		Events:    b,
		Deadlines: b.deadlines,
	}
}

// deadlines lists the Host deadlines of the Session's in-flight timed requests.
func (b *questionsBinding) deadlines(ctx context.Context, sid string) (map[string]time.Time, error) {
	reqs, err := b.a.Inflight(ctx, sid)
	if err != nil {
		return nil, err
	}
	out := make(map[string]time.Time, len(reqs))
	for _, d := range reqs {
		if d.Wait != nil && d.Wait.Timed && d.Deadline != nil {
			out[d.Wait.CallID] = *d.Deadline
		}
	}
	return out, nil
}

// questionsBinding follows waterfall requests and knows, per wait, whether
// a request of it is live, so an attach to an ended wait ends at once.
type questionsBinding struct {
	a *answerer.Client

	mu   sync.Mutex
	live map[waiter.Key]map[string]*liveWait // wait → request id → end
}

// liveWait is a live request of a wait; done closes when it ends.
type liveWait struct {
	refs int
	done chan struct{}
}

// waitOf is the wait a delivery's request answers; unkeyed requests have none.
func waitOf(d *answerer.Delivery) (waiter.Key, bool) {
	if d.Wait == nil {
		return waiter.Key{}, false
	}
	return waiter.Key{Session: d.Session, CallID: d.Wait.CallID}, true
}

func (b *questionsBinding) track(d *answerer.Delivery) {
	key, ok := waitOf(d)
	if !ok {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	byID := b.live[key]
	if byID == nil {
		byID = make(map[string]*liveWait, 1)
		b.live[key] = byID
	}
	lw := byID[d.RequestID]
	if lw == nil {
		lw = &liveWait{done: make(chan struct{})}
		byID[d.RequestID] = lw
	}
	lw.refs++
}

func (b *questionsBinding) untrack(d *answerer.Delivery) {
	key, ok := waitOf(d)
	if !ok {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	lw := b.live[key][d.RequestID]
	if lw == nil {
		return
	}
	if lw.refs--; lw.refs > 0 {
		return
	}
	close(lw.done)
	delete(b.live[key], d.RequestID)
	if len(b.live[key]) == 0 {
		delete(b.live, key)
	}
}

// ended returns a channel closed when the live request of the wait ends,
// or false when no request of it is live here.
func (b *questionsBinding) ended(key waiter.Key) (<-chan struct{}, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, lw := range b.live[key] {
		return lw.done, true
	}
	return nil, false
}

// Follow watches the Session's waterfall through the answerer.
func (b *questionsBinding) Follow(ctx context.Context, sid string, sink RequestSink) (Following, error) {
	h := &questionsHandler{b: b, sink: sink}
	w, err := b.a.Watch(ctx, sid, h)
	if err != nil {
		return nil, err
	}
	return &questionsFollowing{w: w, h: h}, nil
}

// questionsHandler turns the answerer's deliveries into Requests.
type questionsHandler struct {
	b    *questionsBinding
	sink RequestSink

	mu   sync.Mutex
	held map[string]*answerer.Delivery // delivered and not yet cancelled
}

func (h *questionsHandler) Request(d *answerer.Delivery) {
	// Clients see the request as the Host published it, less the reply
	// subject, which is the gateway's business.
	shown := d.WaterfallRequest
	shown.Reply = ""
	payload, err := json.Marshal(shown)
	if err != nil {
		return // the request decoded from JSON, so it encodes again
	}
	h.mu.Lock()
	if h.held == nil {
		h.held = make(map[string]*answerer.Delivery)
	}
	h.held[d.RequestID] = d
	h.mu.Unlock()
	h.b.track(d)
	h.sink.Request(&questionRequest{d: d, payload: payload})
}

func (h *questionsHandler) Cancel(d *answerer.Delivery, reason string) {
	h.mu.Lock()
	delete(h.held, d.RequestID)
	h.mu.Unlock()
	h.b.untrack(d)
	h.sink.End(d.RequestID, reason)
}

type questionsFollowing struct {
	w *answerer.Watch
	h *questionsHandler
}

// Close stops the watch (which delegates what is still live) and forgets
// the requests it delivered.
func (f *questionsFollowing) Close(ctx context.Context) error {
	err := f.w.Close(ctx)
	f.h.mu.Lock()
	held := f.h.held
	f.h.held = nil
	f.h.mu.Unlock()
	for _, d := range held {
		f.h.b.untrack(d)
	}
	return err
}

// questionRequest is a waterfall request as a gateway Request.
type questionRequest struct {
	d       *answerer.Delivery
	payload json.RawMessage
}

func (r *questionRequest) ID() string               { return r.d.RequestID }
func (r *questionRequest) Event() string            { return clientwire.QuestionRequestEvent }
func (r *questionRequest) Payload() json.RawMessage { return r.payload }

// Settle answers with the value's answers; the answerer checks the batch
// against the questions (BAD_ANSWER) before it sends anything.
func (r *questionRequest) Settle(value json.RawMessage) error {
	var v struct {
		Answers []holdover.Answer `json:"answers"`
	}
	if err := json.Unmarshal(value, &v); err != nil {
		return holdover.Newf(holdover.CodeBadRequest, "settle value: %v", err)
	}
	if v.Answers == nil {
		return holdover.New(holdover.CodeBadRequest, "a settle value needs an answers list")
	}
	return r.d.Settle(v.Answers)
}

func (r *questionRequest) Reject(e *holdover.Error) error { return r.d.Reject(e) }

func (r *questionRequest) Delegate(ctx context.Context) error { return r.d.Delegate(ctx) }

// attachWait is the claim stream of W3: it opens a claim of the Client's
// own on the wait, relays the Host's one remainingMs frame, and stays open
// and silent until the Host closes the claim, the request ends or the
// Client lets go. The claim is released on the way out (W4).
func (b *questionsBinding) attachWait(ctx context.Context, params json.RawMessage, send func(json.RawMessage)) error {
	var p struct {
		Session string `json:"session"`
		CallID  string `json:"callId"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return holdover.Newf(holdover.CodeBadRequest, "attachWait params: %v", err)
	}
	if p.CallID == "" {
		return holdover.New(holdover.CodeBadRequest, "attachWait needs a callId")
	}
	ended, live := b.ended(waiter.Key{Session: p.Session, CallID: p.CallID})
	if !live {
		return nil // the wait has ended: no frame, just close (W3)
	}
	claim, err := b.a.AttachWait(ctx, p.Session, p.CallID)
	if err != nil {
		return err
	}
	defer func() {
		release, cancel := context.WithTimeout(context.WithoutCancel(ctx), userquestions.DefaultCallTimeout)
		defer cancel()
		_ = claim.Release(release) // a claim NATS cannot delete now ends with the connection's interest
	}()

	// The request can end before the Host's frame arrives (the wait
	// settled meanwhile): stop waiting for it then.
	wait, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		select {
		case <-ended:
			stop()
		case <-wait.Done():
		}
	}()
	remaining, err := claim.Remaining(wait)
	if err != nil {
		return nil // the wait ended first, or the Client let go
	}
	ms := int64(-1)
	if remaining != waiter.NoDeadline {
		ms = remaining.Milliseconds()
	}
	frame, _ := json.Marshal(map[string]int64{"remainingMs": ms}) // a map of ints always encodes
	send(frame)

	select {
	case <-claim.Closed():
	case <-ended:
	case <-ctx.Done():
	}
	return nil
}
