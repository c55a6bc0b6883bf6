package termclient

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/clientwire"
	"github.com/holdover-dev/holdover/projection"
)

// Session is a watched Session as this Client sees it: the latest
// projection view and the question requests the gateway forwarded for it.
// The two arrive independently (docs/protocol.md); Entries joins them, one
// entry per call (C1).
type Session struct {
	c       *Conn
	id      string
	watchID string
	live    chan struct{} // closed when the watch is live, or has failed

	mu       sync.Mutex
	isLive   bool
	view     projection.View
	requests []*Request // live forwarded requests, in arrival order
	err      error      // why the watch ended
	changed  chan struct{}
}

// Watch watches Session sid and returns once the watch is live: its view
// is known and the gateway follows its requests. A token that does not
// grant the Session is FORBIDDEN.
//
// The first view comes from the question service (userQuestions.view,
// caught up to the Session's last event); the watch then starts after that
// event, so the Session's history is not sent for nothing, and later views
// arrive with it.
func (c *Conn) Watch(ctx context.Context, sid string) (*Session, error) {
	var view projection.View
	if err := c.Call(ctx, clientwire.MethodView, map[string]string{"session": sid}, &view); err != nil {
		return nil, err
	}
	s := &Session{c: c, id: sid, view: view, live: make(chan struct{}), changed: make(chan struct{})}
	id, err := c.register("w", func(id string) { s.watchID = id; c.sessions[id] = s })
	if err != nil {
		return nil, err
	}
	if err := c.send(clientwire.WatchFrame{Type: clientwire.TypeWatch, ID: id, Session: sid, FromSeq: view.LastSeq + 1}); err != nil {
		return nil, err
	}
	select {
	case <-s.live:
	case <-ctx.Done():
		return nil, holdover.Newf(clientwire.CodeUnavailable, "watch Session %s: %v", sid, ctx.Err())
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	return s, nil
}

// ID is the Session's id.
func (s *Session) ID() string { return s.id }

// Err is why the watch ended (the gateway refused it, or the connection
// ended), or nil while it lasts.
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Changed is closed at the next change of the view, the requests or the
// watch itself. Take it before reading what it guards, so no change falls
// between the read and the wait.
func (s *Session) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// notify wakes everyone waiting for a change. s.mu is held.
func (s *Session) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// View is the latest projection view.
func (s *Session) View() projection.View {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.view
}

// onReady: the watch is live. The events themselves are the web
// transcript's business; this Client waits for the watch to be live.
func (s *Session) onReady() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.isLive {
		s.isLive = true
		close(s.live)
	}
}

// onView takes a view frame's projection.
func (s *Session) onView(view json.RawMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var v projection.View
	if err := json.Unmarshal(view, &v); err != nil {
		s.c.log.Warn("passed over a view that does not decode", "session", s.id, "err", err)
		return
	}
	// The service's caught-up view may lead the bucket's: a view never
	// replaces a newer one.
	if v.LastSeq < s.view.LastSeq {
		return
	}
	s.view = v
	s.notify()
}

// onError ends the watch.
func (s *Session) onError(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return
	}
	s.err = err
	if !s.isLive {
		s.isLive = true
		close(s.live)
	}
	s.notify()
}

func (s *Session) addRequest(r *Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r)
	s.notify()
}

func (s *Session) dropRequest(r *Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, x := range s.requests {
		if x == r {
			s.requests = append(s.requests[:i:i], s.requests[i+1:]...)
			break
		}
	}
	s.notify()
}

func (s *Session) changedNow() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notify()
}

// Channel is how an answer to a call would travel now (C3).
type Channel string

const (
	// ChannelWaterfall: a live forwarded request; the answer settles the
	// tool call in the foreground.
	ChannelWaterfall Channel = "waterfall"
	// ChannelRPC: the call continued; the answer goes through the
	// late-answer RPC and reaches the agent as a user message (D6).
	ChannelRPC Channel = "rpc"
	// ChannelNone: nothing can take an answer here right now.
	ChannelNone Channel = "none"
)

// Entry is one question call of the Session: the projection's entry for
// it and the live request for it, either of which may be missing (C1). An
// unkeyed blocking request (C2) is an entry of its own without a call id.
type Entry struct {
	CallID string
	// Call is the projection's active call, nil when the view does not
	// list it (not yet, or never for an unkeyed request).
	Call *projection.Call
	// Request is the live forwarded request, nil when none is live here.
	Request *Request
}

// Questions are the live request's questions, else the projection's.
func (e Entry) Questions() []holdover.Question {
	if e.Request != nil {
		return e.Request.Questions
	}
	if e.Call != nil {
		return e.Call.Questions
	}
	return nil
}

// Channel is how an answer would travel now: the RPC once the call has
// continued, the waterfall while a live request has no outcome from here,
// else none.
func (e Entry) Channel() Channel {
	switch {
	case e.Call != nil && e.Call.Status == projection.Continued:
		return ChannelRPC
	case e.Request != nil && !e.Request.answered():
		return ChannelWaterfall
	}
	return ChannelNone
}

// Entries lists the Session's open and continued calls in the order of
// the projection, then the requests it does not list yet, then the unkeyed
// requests.
func (s *Session) Entries() []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Entry
	listed := make(map[string]bool, len(s.view.Active))
	for i := range s.view.Active {
		call := s.view.Active[i]
		listed[call.CallID] = true
		out = append(out, Entry{CallID: call.CallID, Call: &call, Request: s.requestFor(call.CallID)})
	}
	for _, r := range s.requests {
		if r.CallID != "" && !listed[r.CallID] && s.requestFor(r.CallID) == r {
			out = append(out, Entry{CallID: r.CallID, Request: r})
		}
	}
	for _, r := range s.requests {
		if r.CallID == "" {
			out = append(out, Entry{Request: r})
		}
	}
	return out
}

// Entry returns the entry of callID, if the Session has one.
func (s *Session) Entry(callID string) (Entry, bool) {
	for _, e := range s.Entries() {
		if e.CallID == callID && callID != "" {
			return e, true
		}
	}
	return Entry{}, false
}

// requestFor is the latest live request of callID: a re-asked call
// replaces the one before (D3). s.mu is held.
func (s *Session) requestFor(callID string) *Request {
	for i := len(s.requests) - 1; i >= 0; i-- {
		if s.requests[i].CallID == callID {
			return s.requests[i]
		}
	}
	return nil
}

// Request is a question request the gateway forwarded from the question
// worker. It takes exactly one outcome from this Client.
type Request struct {
	c         *Conn
	s         *Session
	ID        string
	CallID    string // "" for an unkeyed blocking request (C2)
	Timed     bool   // wait.timed: answering needs an attachWait claim first (W3)
	Questions []holdover.Question
	Intent    *holdover.Intent
	ended     chan struct{}

	mu      sync.Mutex
	outcome string // the outcome this Client sent, if any
	reason  string // why the worker ended the request
	refusal error  // the gateway's refusal of the last outcome
	claim   *ClaimStream
}

// questionPayload is the part of a question request's payload a Client reads.
type questionPayload struct {
	Questions []holdover.Question `json:"questions"`
	Intent    *holdover.Intent    `json:"intent"`
	Wait      *struct {
		CallID string `json:"callId"`
		Timed  bool   `json:"timed"`
	} `json:"wait"`
}

// onRequest takes a forwarded request. Question requests join their
// Session; anything else is delegated, as the web Client does with events
// it does not handle.
func (c *Conn) onRequest(f clientwire.RequestFrame) {
	c.mu.Lock()
	if _, again := c.requests[f.ID]; again {
		c.mu.Unlock()
		return // forwarded again: the one this Client holds stands
	}
	var s *Session
	for _, x := range c.sessions {
		if x.id == f.Session {
			s = x
			break
		}
	}
	c.mu.Unlock()
	if s == nil || f.Event != clientwire.QuestionRequestEvent {
		_ = c.send(clientwire.DelegateFrame{Type: clientwire.TypeDelegate, ID: f.ID})
		return
	}
	r, problem := newRequest(c, s, f)
	if problem != "" {
		_ = c.send(clientwire.RejectFrame{Type: clientwire.TypeReject, ID: f.ID, Error: &holdover.Error{Code: holdover.CodeBadRequest, Message: problem}})
		return
	}
	c.mu.Lock()
	c.requests[r.ID] = r
	c.mu.Unlock()
	s.addRequest(r)
}

// newRequest reads a question request, or says what is wrong with it.
func newRequest(c *Conn, s *Session, f clientwire.RequestFrame) (*Request, string) {
	var p questionPayload
	if err := json.Unmarshal(f.Payload, &p); err != nil {
		return nil, "the request's payload is not a question request: " + err.Error()
	}
	if err := holdover.ValidateQuestions(p.Questions); err != nil {
		return nil, "the request's questions are unusable: " + err.Error()
	}
	r := &Request{c: c, s: s, ID: f.ID, Questions: p.Questions, Intent: p.Intent, ended: make(chan struct{})}
	if p.Wait != nil {
		if p.Wait.CallID == "" {
			return nil, "the request's wait has no callId"
		}
		r.CallID, r.Timed = p.Wait.CallID, p.Wait.Timed
	}
	return r, ""
}

// onCancel: the worker ended a request. That alone never says the question
// was answered (C5); the projection does.
func (c *Conn) onCancel(f clientwire.CancelFrame) {
	c.mu.Lock()
	r := c.requests[f.ID]
	delete(c.requests, f.ID)
	c.mu.Unlock()
	if r != nil {
		r.end(f.Reason)
	}
}

// reasonGone is the end reason of requests whose connection ended.
const reasonGone = "gone"

// end marks the request ended at the worker; its claim goes with it.
func (r *Request) end(reason string) {
	r.mu.Lock()
	select {
	case <-r.ended:
		r.mu.Unlock()
		return
	default:
	}
	r.reason = reason
	close(r.ended)
	claim := r.claim
	r.claim = nil
	r.mu.Unlock()
	if claim != nil {
		claim.Release()
	}
	r.s.dropRequest(r)
}

// Ended is closed when the worker has ended the request.
func (r *Request) Ended() <-chan struct{} { return r.ended }

// Reason is why the worker ended the request (answered, expired, rejected,
// aborted, owner-lost, gone), for display only.
func (r *Request) Reason() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reason
}

// Refusal is the gateway's refusal of this Client's last outcome, if any:
// BAD_ANSWER for a batch that does not fit (which leaves the request open
// for a corrected one), NOT_FOUND for a request that has ended.
func (r *Request) Refusal() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.refusal
}

func (r *Request) answered() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.outcome != ""
}

// refused records the gateway's error about this request's outcome.
func (r *Request) refused(err error) {
	r.mu.Lock()
	r.refusal = err
	if holdover.HasCode(err, holdover.CodeBadAnswer) {
		r.outcome = "" // a refused batch does not count; a corrected one may follow
	}
	r.mu.Unlock()
	r.s.changedNow()
}

// Settle answers the request through the waterfall. Nothing acknowledges
// it (W8: the first outcome at the worker wins); the projection tells what
// happened (C4).
func (r *Request) Settle(answers []holdover.Answer) error {
	value, err := json.Marshal(holdover.Batch{Answers: answers})
	if err != nil {
		return holdover.Newf(holdover.CodeInternal, "encode the answers: %v", err)
	}
	return r.outcomeOnce(clientwire.SettleFrame{Type: clientwire.TypeSettle, ID: r.ID, Value: value})
}

// Reject fails the request with a coded error, e.g. after a terminal
// claim failure (SPEC §7).
func (r *Request) Reject(e *holdover.Error) error {
	return r.outcomeOnce(clientwire.RejectFrame{Type: clientwire.TypeReject, ID: r.ID, Error: e})
}

// Delegate passes the request on without answering it.
func (r *Request) Delegate() error {
	return r.outcomeOnce(clientwire.DelegateFrame{Type: clientwire.TypeDelegate, ID: r.ID})
}

// outcomeOnce sends the request's one outcome from this Client.
func (r *Request) outcomeOnce(f clientwire.ClientFrame) error {
	r.mu.Lock()
	if r.outcome != "" {
		r.mu.Unlock()
		return holdover.Newf(holdover.CodeBadRequest, "request %s already has this Client's %s", r.ID, r.outcome)
	}
	r.outcome, r.refusal = f.FrameType(), nil
	r.mu.Unlock()
	return r.c.send(f)
}

// teardown releases the request's claim, then delegates it if it has no
// outcome yet: explicit delegation releases the claim first (W4).
func (r *Request) teardown() {
	r.mu.Lock()
	claim := r.claim
	r.claim = nil
	r.mu.Unlock()
	if claim != nil {
		claim.Release()
	}
	if !r.answered() {
		_ = r.Delegate()
	}
}

// ClaimStream is this Client's end of an attachWait stream, the claim
// stream: while it is open, the gateway holds a claim on the wait for this
// Client (an answerer.Claim) and the wait's Host deadline does not run (W2,
// W3).
type ClaimStream struct {
	s *Stream
}

// AttachWait opens the claim stream of a timed request's wait. The claim
// belongs to the request: it is released when the request ends or the
// Client tears down.
func (r *Request) AttachWait() (*ClaimStream, error) {
	// The claim's end is a change of the Session: whoever waits on it
	// looks again.
	s, err := r.c.open(clientwire.MethodAttachWait, map[string]string{"session": r.s.id, "callId": r.CallID}, r.s.changedNow)
	if err != nil {
		return nil, err
	}
	claim := &ClaimStream{s: s}
	r.mu.Lock()
	select {
	case <-r.ended:
		r.mu.Unlock()
		claim.Release()
		return claim, nil
	default:
	}
	r.claim = claim
	r.mu.Unlock()
	return claim, nil
}

// NoDeadline is the remainingMs of a wait without a Host deadline.
const NoDeadline = -1

// Remaining waits for the claim's one frame and returns the worker-computed
// time left in milliseconds (NoDeadline for none). ok is false when the
// stream ended without a frame: the wait had ended (W3), or the stream
// failed, which err then says.
func (c *ClaimStream) Remaining(ctx context.Context) (ms int64, ok bool, err error) {
	select {
	case data := <-c.s.Frames():
		var v struct {
			RemainingMs *int64 `json:"remainingMs"`
		}
		if json.Unmarshal(data, &v) != nil || v.RemainingMs == nil || *v.RemainingMs < NoDeadline {
			return 0, false, holdover.Newf(clientwire.CodeBadFrame, "the attachWait frame carries no valid remainingMs: %s", data)
		}
		return *v.RemainingMs, true, nil
	case <-c.s.Done():
		return 0, false, c.s.Err()
	case <-ctx.Done():
		return 0, false, holdover.Newf(clientwire.CodeUnavailable, "wait for the claim's frame: %v", ctx.Err())
	}
}

// Closed is closed when the claim has ended: the worker closed it because
// the foreground request settled (W4), the stream failed (Err), or this
// Client released it.
func (c *ClaimStream) Closed() <-chan struct{} { return c.s.Done() }

// Err is why the stream failed: nil for a clean close. A failure is
// terminal for the claim (SPEC §7).
func (c *ClaimStream) Err() error { return c.s.Err() }

// Release ends the claim from this side.
func (c *ClaimStream) Release() { c.s.Close() }
