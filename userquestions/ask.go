package userquestions

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/holdover-dev/holdover"
	leases "github.com/holdover-dev/holdover/lease"
	"github.com/holdover-dev/holdover/liveroot"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/waiter"
)

// The endpoint names of the foreground half.
const (
	opAsk      = "ask"
	opAskTimed = "askTimed"
	opInflight = "inflight"
)

// The headers of the foreground protocol between a Go Client and the
// worker. A caller that sends none (the nats CLI, say) gets one plain
// reply; a caller that names its lease also gets an accepted frame first,
// naming the worker that owns the wait, so each side can tell when the
// other is gone.
const (
	// headerCallerLease names the caller's liveness lease.
	headerCallerLease = "Holdover-Caller-Lease"
	// headerFrame marks the accepted frame ("accepted").
	headerFrame   = "Holdover-Frame"
	frameAccepted = "accepted"
	// headerOwnerStopped marks a reply from a worker that is stopping or
	// lost NATS: stoppedEndedWait when it ended the call's wait, which the
	// caller takes as the loss of the owner; any other value when it
	// refused the call before a wait existed, which the caller asks again.
	headerOwnerStopped = "Holdover-Owner-Stopped"
	stoppedEndedWait   = "ended"
)

// The requests the owner of a wait takes from its caller on
// <streams.ServicePrefix>.wait.<owner lease>.<verb>; the body is the
// request id.
const (
	verbAbort  = "abort"  // the caller stopped waiting: ASK_ABORTED
	verbStatus = "status" // is the request still live? (after a reconnect)
)

func ownerSubject(owner, verb string) string {
	return streams.ServicePrefix + ".wait." + owner + "." + verb
}

// accepted is the body of the accepted frame.
type accepted struct {
	Owner     string `json:"owner"`
	RequestID string `json:"requestId"`
}

// InflightRequest lists the live foreground requests of a Session.
type InflightRequest struct {
	Session string `json:"session"`
}

// InflightResult is one worker's share of a Session's live requests.
type InflightResult struct {
	Requests []WaterfallRequest `json:"requests"`
}

// DefaultReconcileEvery is how often a worker lists the claims stream to
// catch an advisory it missed while connected. Reconnects reconcile at once.
const DefaultReconcileEvery = 30 * time.Second

// ForegroundConfig configures the foreground half: waits and claims.
type ForegroundConfig struct {
	// Clock is the time of the waits' Host deadlines; nil is the real clock.
	Clock clockwork.Clock
	// ReleaseBound is the InactiveThreshold of the worker's lease: how long
	// callers and Clients take to notice a dead worker. 0 means
	// DefaultReleaseBound; values below MinReleaseBound are raised to it.
	ReleaseBound time.Duration
	// ReconcileEvery is the slow safety-net interval of claim
	// reconciliation; 0 means DefaultReconcileEvery, negative never.
	ReconcileEvery time.Duration
}

// waitKind is which of the three foreground calls a wait serves.
type waitKind uint8

const (
	legacyWait waitKind = iota // ask without a call id (M1)
	keyedWait                  // ask with a call id: timeout -1 (M3)
	timedWait                  // askTimed
)

// liveWait is one foreground wait this worker owns: the waiter's Wait,
// the waterfall request it published, the caller to reply to and the
// claims it holds.
type liveWait struct {
	w      *waiter.Wait
	kind   waitKind
	req    WaterfallRequest
	reply  string        // the caller's reply subject
	caller string        // the caller's lease, when it named one
	seq    uint64        // registration order, for reconciliation
	root   *confirmation // the caller's M9 check, when it runs beside the wait

	finishing sync.Once

	mu      sync.Mutex
	claims  []heldClaim
	ended   bool // finish has taken the claims; later ones close at once
	stopped bool // the worker ended it by stopping
}

type heldClaim struct {
	name string
	seq  uint64
}

// foreground is the part of the service that owns foreground waits: the
// ask, askTimed and inflight endpoints, the waterfall, claims and leases.
type foreground struct {
	nc        *nats.Conn
	js        jetstream.JetStream
	log       *slog.Logger
	s         *Service
	reg       *waiter.Registry
	roots     *liveroot.Cache // which callers M9 most likely admits
	bound     time.Duration
	reconcile time.Duration

	leaseID   string // stable for the worker's life: the lease is re-held
	leaseName string // under the same name if NATS drops it
	wf        *waterfall
	adv       *nats.Subscription // claims-stream advisories
	subs      []*nats.Subscription
	stopSync  func()
	replies   sync.WaitGroup // finishes not yet done
	leaseMu   sync.Mutex     // serialises re-holding the lease

	mu        sync.Mutex
	lease     *leases.Lease
	stopping  bool
	seq       uint64
	byRequest map[string]*liveWait
	byKey     map[waiter.Key]*liveWait
	bySession map[string]map[string]*liveWait // session → request id
	byCaller  map[string]map[string]*liveWait // caller lease → request id

	// liveCallers are the caller leases seen to exist and not advised
	// deleted since, on the connection as it was at reconnect count
	// callersAt (a reconnect may have lost advisories). A wait of a
	// caller in it needs no look-up; callerGone counts its calls in gone,
	// so a look-up that raced one is not remembered.
	liveCallers map[string]struct{}
	callersAt   uint64
	gone        uint64
}

// callerCheck is a look-up of a caller's lease, and what it needs to be
// remembered.
type callerCheck struct {
	name     string
	gone, at uint64
}

func newForeground(s *Service) *foreground {
	cfg := s.cfg.Foreground
	clock := cfg.Clock
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	every := cfg.ReconcileEvery
	if every == 0 {
		every = DefaultReconcileEvery
	}
	id := nuid.Next()
	return &foreground{
		nc:        s.nc,
		js:        s.js,
		log:       s.log.With("part", "foreground"),
		s:         s,
		reg:       waiter.NewRegistry(clock),
		roots:     liveroot.NewCache(s.roots, s.nc, s.log),
		bound:     leases.Bound(cfg.ReleaseBound),
		reconcile: every,
		leaseID:   id,
		leaseName: leases.Name(roleWorker, id),
		byRequest: make(map[string]*liveWait),
		byKey:     make(map[waiter.Key]*liveWait),
		bySession: make(map[string]map[string]*liveWait),
		byCaller:  make(map[string]map[string]*liveWait),

		liveCallers: make(map[string]struct{}),
	}
}

func (fg *foreground) endpoints() []endpoint {
	return []endpoint{
		{name: opAsk, serve: fg.ask, repliesLater: true},
		{name: opAskTimed, serve: fg.askTimed, repliesLater: true},
		{name: opInflight, serve: fg.inflight, fanOut: true},
	}
}

// start holds the worker's lease and subscribes to outcomes, claim
// advisories and caller control before any request can arrive.
func (fg *foreground) start(ctx context.Context) error {
	l, err := leases.Hold(ctx, fg.nc, fg.js, roleWorker, fg.leaseID, fg.bound)
	if err != nil {
		return err
	}
	fg.lease = l
	if err := fg.roots.Start(ctx); err != nil {
		fg.endLease()
		return err
	}
	fail := func(err error) error {
		fg.roots.Stop()
		fg.unsubscribe()
		if fg.wf != nil {
			fg.wf.close()
		}
		fg.endLease()
		return err
	}
	if fg.wf, err = newWaterfall(fg.nc, fg.route); err != nil {
		return fail(err)
	}
	for _, sub := range []struct {
		subject string
		h       nats.MsgHandler
		keep    **nats.Subscription
	}{
		{leases.AdvisoryPrefix + "*." + streams.ClaimsStream + ".*", fg.onAdvisory, &fg.adv},
		{ownerSubject(fg.leaseName, verbAbort), fg.onAbort, nil},
		{ownerSubject(fg.leaseName, verbStatus), fg.onStatus, nil},
	} {
		s, err := fg.nc.Subscribe(sub.subject, sub.h)
		if err != nil {
			return fail(holdover.Newf(holdover.CodeInternal, "subscribe to %s: %v", sub.subject, err))
		}
		_ = s.SetPendingLimits(-1, -1) // a dropped advisory is a claim nobody releases
		fg.subs = append(fg.subs, s)
		if sub.keep != nil {
			*sub.keep = s
		}
	}
	if err := flush(ctx, fg.nc); err != nil {
		return fail(err)
	}
	fg.stopSync = leases.OnReconnect(fg.nc, fg.reconcile, fg.reconcileClaims)
	return nil
}

// stop ends every live wait as if its worker had died, but at once: a
// timed call turns pending, a blocking caller asks again elsewhere.
func (fg *foreground) stop() {
	fg.mu.Lock()
	fg.stopping = true
	waits := make([]*liveWait, 0, len(fg.byRequest))
	for _, lw := range fg.byRequest {
		waits = append(waits, lw)
	}
	fg.mu.Unlock()
	fg.stopSync()
	fg.unsubscribe()
	abandon(waits)
	fg.replies.Wait()
	fg.wf.close()
	fg.roots.Stop()
	fg.endLease()
}

// abandon ends waits whose worker is going away, or whose callers have
// already given them up: a timed call turns pending, and the caller of a
// blocking one is told to ask again elsewhere. A Go Client reads the
// replies as the loss of the owner, whichever it noticed first.
func abandon(waits []*liveWait) {
	for _, lw := range waits {
		lw.mu.Lock()
		lw.stopped = true
		lw.mu.Unlock()
		if lw.kind == timedWait {
			lw.w.Reject(holdover.New(holdover.CodeAskTimedOut, "the question worker stopped or lost NATS; the question stays answerable"))
		} else {
			lw.w.Reject(holdover.New(holdover.CodeInternal, "the question worker stopped or lost NATS before the question was answered; ask again"))
		}
	}
}

func (fg *foreground) unsubscribe() {
	for _, sub := range fg.subs {
		_ = sub.Unsubscribe()
	}
	fg.subs = nil
}

func (fg *foreground) endLease() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	fg.mu.Lock()
	l := fg.lease
	fg.mu.Unlock()
	if err := l.End(ctx); err != nil {
		fg.log.Warn("end worker lease", "lease", fg.leaseName, "err", err)
	}
}

// asking is a validated ask or askTimed request.
type asking struct {
	kind      waitKind
	session   string
	callID    string
	agent     *holdover.AgentRef
	questions []holdover.Question
	intent    *holdover.Intent
	timeout   time.Duration
}

// ask serves the blocking ask: legacy without a call id, keyed with one
// (M1, M3). Plan review keeps it, with its intent validated (M8).
func (fg *foreground) ask(ctx context.Context, req *request) (any, error) {
	var in holdover.AskRequest
	if err := decode(req.data, &in); err != nil {
		return nil, err
	}
	a := asking{kind: legacyWait, session: in.Session, callID: in.CallID, agent: in.Agent, questions: in.Questions, intent: in.Intent}
	if in.CallID != "" {
		a.kind = keyedWait
	}
	if err := holdover.ValidateIntent(in.Intent, in.Questions); err != nil {
		return nil, err
	}
	return nil, fg.begin(ctx, req, a)
}

// askTimed serves a bounded foreground wait (W1, W5, W6).
func (fg *foreground) askTimed(ctx context.Context, req *request) (any, error) {
	var in struct {
		holdover.AskTimedRequest
		// Kept raw, so 1.5, 2147483648 or "60" is BAD_TIMEOUT, not a
		// decoding failure or, for a quoted number, a valid timeout.
		TimeoutMs json.RawMessage `json:"timeoutMs"`
	}
	if err := decode(req.data, &in); err != nil {
		return nil, err
	}
	timeout, err := holdover.ParseTimeoutMs(json.Number(in.TimeoutMs))
	if err != nil {
		return nil, err
	}
	if in.Agent == nil {
		return nil, holdover.New(holdover.CodeCallerNotLive, "timed questions require a live agent")
	}
	if in.CallID == "" {
		return nil, holdover.New(holdover.CodeBadRequest, "a timed question needs the tool call id")
	}
	a := asking{kind: timedWait, session: in.Session, callID: in.CallID, agent: in.Agent, questions: in.Questions, timeout: timeout}
	return nil, fg.begin(ctx, req, a)
}

// begin checks a, starts its wait, tells a lease-holding caller who owns
// it, and publishes its waterfall request. The reply follows in finish.
func (fg *foreground) begin(ctx context.Context, req *request, a asking) error {
	if err := checkSession(a.session); err != nil {
		return err
	}
	if a.kind != legacyWait {
		if err := checkCall(a.callID); err != nil {
			return err
		}
	}
	if err := holdover.ValidateQuestions(a.questions); err != nil {
		return err
	}
	if req.reply == "" {
		return holdover.New(holdover.CodeBadRequest, "a question needs a reply subject to answer on")
	}
	// M9. A caller the cache vouches for is checked while its request goes
	// out, which saves the registry read on the way to the Clients; any
	// other is checked before anything is sent.
	vouched := a.agent != nil && fg.roots.Holds(a.session, *a.agent)
	if a.agent != nil && !vouched {
		if err := fg.s.roots.Check(ctx, a.session, *a.agent); err != nil {
			return err
		}
	}
	w, err := fg.reg.Start(context.Background(), waiter.Key{Session: a.session, CallID: a.callID}, a.timeout)
	if err != nil {
		return err
	}
	var root *confirmation
	if vouched {
		root = fg.confirm(ctx, w, a.session, *a.agent)
	}
	// The request is complete before track makes it visible to inflight.
	id := newRequestID()
	lw := &liveWait{
		w:      w,
		kind:   a.kind,
		reply:  req.reply,
		caller: req.header.Get(headerCallerLease),
		root:   root,
		req: WaterfallRequest{
			RequestID: id,
			Session:   a.session,
			CallID:    a.callID,
			Questions: a.questions,
			Intent:    a.intent,
			Owner:     fg.leaseName,
			Reply:     fg.wf.replySubject(id),
		},
	}
	if a.kind != legacyWait {
		lw.req.Wait = &WaitRef{CallID: a.callID, Timed: a.kind == timedWait}
	}
	check := fg.track(lw)
	fg.replies.Add(1)
	context.AfterFunc(w.Context(), func() { fg.finish(lw) })

	if err := fg.wf.publish(&lw.req); err != nil {
		w.Reject(err)
	}
	// After the request, which is what the latency is measured by: a
	// reply that overtakes this frame simply ends the call first.
	if lw.caller != "" {
		fg.sendAccepted(lw)
		if check != nil {
			go fg.checkCaller(*check)
		}
	}
	return nil
}

// confirmation is an M9 check under way beside a wait.
type confirmation struct {
	done chan struct{}
	err  error
}

// confirm checks ref against the registry while w runs, and ends w with
// the refusal if the cache vouched for a caller that is no longer the live
// root: a takeover or release the watch had not delivered yet (see
// liveroot.Cache). Such a request may reach Clients for as long as the
// read takes, and is then cancelled; its caller gets the refusal whatever
// settled the wait, since finish waits for the check (which is long done
// by the time a person answers).
func (fg *foreground) confirm(ctx context.Context, w *waiter.Wait, sid string, ref holdover.AgentRef) *confirmation {
	c := &confirmation{done: make(chan struct{})}
	go func() {
		defer close(c.done)
		// Not cut short by Stop: a stopping worker's reply still needs it.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultCallTimeout)
		defer cancel()
		if c.err = fg.s.roots.Check(ctx, sid, ref); c.err != nil {
			w.Reject(c.err)
		}
	}()
	return c
}

// pending reports whether the check is still under way.
func (c *confirmation) pending() bool {
	if c == nil {
		return false
	}
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

// wait returns the check's refusal, once it is done; nil when no check
// ran beside the wait.
func (c *confirmation) wait() error {
	if c == nil {
		return nil
	}
	<-c.done
	return c.err
}

func (fg *foreground) sendAccepted(lw *liveWait) {
	msg := nats.NewMsg(lw.reply)
	msg.Header.Set(headerFrame, frameAccepted)
	msg.Data, _ = json.Marshal(accepted{Owner: fg.leaseName, RequestID: lw.req.RequestID}) // strings only
	if err := fg.nc.PublishMsg(msg); err != nil {
		fg.log.Warn("send accepted frame", "request", lw.req.RequestID, "err", err)
	}
}

// track indexes lw and returns the look-up its caller's lease needs, if
// the lease is not known to exist: a caller that died before its request
// arrived left no advisory to hear. A known lease needs none, since its
// deletion is advised after this, and then ends lw (callerGone).
func (fg *foreground) track(lw *liveWait) *callerCheck {
	fg.mu.Lock()
	defer fg.mu.Unlock()
	fg.seq++
	lw.seq = fg.seq
	id := lw.req.RequestID
	fg.byRequest[id] = lw
	if lw.kind != legacyWait {
		fg.byKey[lw.w.Key()] = lw
	}
	addTo(fg.bySession, lw.req.Session, id, lw)
	if lw.caller == "" {
		return nil
	}
	addTo(fg.byCaller, lw.caller, id, lw)
	if at := fg.nc.Stats().Reconnects; at != fg.callersAt {
		clear(fg.liveCallers)
		fg.callersAt = at
	}
	if _, known := fg.liveCallers[lw.caller]; known {
		return nil
	}
	return &callerCheck{name: lw.caller, gone: fg.gone, at: fg.callersAt}
}

func (fg *foreground) untrack(lw *liveWait) {
	fg.mu.Lock()
	defer fg.mu.Unlock()
	id := lw.req.RequestID
	delete(fg.byRequest, id)
	if fg.byKey[lw.w.Key()] == lw {
		delete(fg.byKey, lw.w.Key())
	}
	removeFrom(fg.bySession, lw.req.Session, id)
	if lw.caller != "" {
		removeFrom(fg.byCaller, lw.caller, id)
	}
}

// addTo adds lw to the set under key.
func addTo(m map[string]map[string]*liveWait, key, id string, lw *liveWait) {
	set, ok := m[key]
	if !ok {
		set = make(map[string]*liveWait, 1)
		m[key] = set
	}
	set[id] = lw
}

func removeFrom(m map[string]map[string]*liveWait, key, id string) {
	if set := m[key]; set != nil {
		delete(set, id)
		if len(set) == 0 {
			delete(m, key)
		}
	}
}

// finish runs once the wait has settled: it replies to the caller first
// (that is the latency that matters), then tells the Session's answerers
// the request ended and closes its claims (W4, W7). A Client's outcome
// finishes its wait at once, on the goroutine that routed it, unless the
// caller's M9 check is still under way: that may take a round trip, which
// the other waits' outcomes must not queue behind. Every other ending
// reaches finish through the wait's context. Either way it runs once.
func (fg *foreground) finish(lw *liveWait) {
	if lw.root.pending() {
		go lw.finishing.Do(func() { fg.finishOnce(lw) })
		return
	}
	lw.finishing.Do(func() { fg.finishOnce(lw) })
}

func (fg *foreground) finishOnce(lw *liveWait) {
	defer fg.replies.Done()
	answers, settleErr := lw.w.Result(context.Background()) // settled: returns at once
	if err := lw.root.wait(); err != nil {
		// The cache vouched for a caller the registry refuses: whatever
		// settled the wait, the caller gets the refusal, never an answer.
		answers, settleErr = nil, err
	}
	fg.untrack(lw)

	var result any
	err := settleErr
	if lw.kind == timedWait {
		result, err = waiter.TimedOutcome(answers, settleErr)
	} else if err == nil {
		result = holdover.Batch{Answers: answers}
	}
	msg, encErr := fg.s.replyMsg(lw.reply, result, err)
	if encErr != nil {
		msg = errorMsg(lw.reply, encErr)
	}
	lw.mu.Lock()
	lw.ended = true
	claims := lw.claims
	lw.claims = nil
	if lw.stopped {
		if msg.Header == nil {
			msg.Header = nats.Header{}
		}
		msg.Header.Set(headerOwnerStopped, stoppedEndedWait)
	}
	lw.mu.Unlock()
	if perr := fg.nc.PublishMsg(msg); perr != nil {
		fg.log.Warn("send foreground reply", "request", lw.req.RequestID, "err", perr)
	}

	if cerr := fg.wf.cancel(lw.req.Session, CancelNotice{RequestID: lw.req.RequestID, CallID: lw.req.CallID, Reason: cancelReason(settleErr)}); cerr != nil {
		fg.log.Warn("send cancel notice", "request", lw.req.RequestID, "err", cerr)
	}
	// Closing takes JetStream round trips, and up to the release bound for
	// a Client that is gone: neither the outcomes of other waits nor the
	// other claims queue behind it.
	for _, c := range claims {
		fg.replies.Add(1)
		go func() {
			defer fg.replies.Done()
			fg.closeClaim(c.name)
		}()
	}
}

// inflight lists this worker's live requests of a Session. Every worker
// answers (the endpoint fans out); the Client merges the lists.
func (fg *foreground) inflight(_ context.Context, req *request) (any, error) {
	var in InflightRequest
	if err := decode(req.data, &in); err != nil {
		return nil, err
	}
	if err := checkSession(in.Session); err != nil {
		return nil, err
	}
	fg.mu.Lock()
	defer fg.mu.Unlock()
	out := InflightResult{Requests: make([]WaterfallRequest, 0, len(fg.bySession[in.Session]))}
	for _, lw := range fg.bySession[in.Session] {
		out.Requests = append(out.Requests, lw.req)
	}
	return out, nil
}

// route applies one waterfall outcome to its wait. An outcome for a
// request that has ended lost the race and is dropped (W8).
func (fg *foreground) route(requestID string, m *nats.Msg) {
	fg.mu.Lock()
	lw := fg.byRequest[requestID]
	fg.mu.Unlock()
	if lw == nil {
		return
	}
	if isNoResponders(m) {
		// Final only for a legacy ask: a timed wait waits out its deadline
		// and a keyed blocking one waits for a Client to join (W6).
		if lw.kind == legacyWait && lw.w.NoProvider() {
			fg.finish(lw)
		}
		return
	}
	out, err := parseOutcome(m.Data)
	if err != nil {
		fg.log.Warn("drop malformed waterfall outcome", "request", requestID, "err", err)
		return
	}
	switch out.Kind {
	case OutcomeSettle:
		// A batch that does not fit the questions answers nothing; the
		// request stays open for a good one.
		if err := holdover.ValidateBatch(lw.req.Questions, out.Answers); err != nil {
			fg.log.Warn("drop answer batch", "request", requestID, "err", err)
			return
		}
		if lw.w.Answer(out.Answers) {
			fg.finish(lw)
		}
	case OutcomeReject:
		if lw.w.Reject(&holdover.Error{Code: out.Error.Code, Message: out.Error.Message}) {
			fg.finish(lw)
		}
	case OutcomeDelegate:
		fg.log.Debug("request delegated", "request", requestID)
	}
}

// onAbort ends a wait whose caller stopped waiting (W5: ASK_ABORTED).
func (fg *foreground) onAbort(m *nats.Msg) {
	fg.mu.Lock()
	lw := fg.byRequest[string(m.Data)]
	fg.mu.Unlock()
	if lw != nil {
		lw.w.Reject(holdover.Newf(holdover.CodeAskAborted, "the caller stopped waiting before call %q was answered", lw.req.CallID))
	}
	if m.Reply != "" {
		_ = m.Respond(nil)
	}
}

// onStatus tells a reconnected caller whether its request is still live;
// if not, the reply it was sent was lost while it was cut off.
func (fg *foreground) onStatus(m *nats.Msg) {
	fg.mu.Lock()
	_, live := fg.byRequest[string(m.Data)]
	fg.mu.Unlock()
	answer := []byte("gone")
	if live {
		answer = []byte("live")
	}
	_ = m.Respond(answer)
}

// checkCaller ends the waits of a caller whose lease is already gone, and
// remembers a lease that exists, unless a deletion may have been advised
// meanwhile or the connection reconnected.
func (fg *foreground) checkCaller(c callerCheck) {
	ctx, cancel := context.WithTimeout(context.Background(), fg.bound)
	defer cancel()
	alive, err := leases.Exists(ctx, fg.js, c.name)
	switch {
	case err != nil:
		fg.log.Warn("check caller lease", "lease", c.name, "err", err)
	case !alive:
		fg.callerGone(c.name)
	default:
		fg.mu.Lock()
		if fg.gone == c.gone && fg.callersAt == c.at {
			fg.liveCallers[c.name] = struct{}{}
		}
		fg.mu.Unlock()
	}
}

// callerGone ends every wait of a caller that died (W5: ASK_ABORTED), so no
// wait is left without anyone to answer to.
func (fg *foreground) callerGone(name string) {
	fg.mu.Lock()
	delete(fg.liveCallers, name)
	fg.gone++
	set := fg.byCaller[name]
	waits := make([]*liveWait, 0, len(set))
	for _, lw := range set {
		waits = append(waits, lw)
	}
	fg.mu.Unlock()
	for _, lw := range waits {
		lw.w.Reject(holdover.Newf(holdover.CodeAskAborted, "the agent waiting on call %q is gone", lw.req.CallID))
	}
	if len(waits) > 0 {
		fg.log.Info("caller gone; its waits aborted", "lease", name, "waits", len(waits))
	}
}

// LiveWaits is the number of foreground waits this worker holds: ask and
// askTimed calls not yet settled. Operators and tests read it to see that
// a gone caller left nothing behind (W7).
func (s *Service) LiveWaits() int { return s.foreground().reg.Len() }

func (s *Service) foreground() *foreground {
	for _, p := range s.parts {
		if fg, ok := p.(*foreground); ok {
			return fg
		}
	}
	panic("userquestions: the service has no foreground part")
}
