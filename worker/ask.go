package worker

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/holdover-dev/holdover"
	leases "github.com/holdover-dev/holdover/lease"
	"github.com/holdover-dev/holdover/liveroot"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/userquestions"
	"github.com/holdover-dev/holdover/waiter"
)

// foregroundHalf is the half of the worker that serves foreground waits:
// the ask, askTimed and inflight endpoints, the waterfall, claims, the
// worker's lease and its callers' leases. It is a NATS adapter over a
// waiter.Registry, which holds every wait with its deadline, claims and
// indexes; what this half adds is only what a wait needs on the wire.
type foregroundHalf struct {
	nc        *nats.Conn
	js        jetstream.JetStream
	claims    jetstream.Stream // CLAIMS: the claims on its waits, and the leases
	log       *slog.Logger
	reg       *waiter.Registry
	clock     clockwork.Clock    // the waits' deadlines and claim holders' patience
	registry  *liveroot.Registry // whom M9 admits
	roots     *liveroot.Cache    // which callers M9 most likely admits
	views     *projection.Store  // whether a Session's log tracks a timed call (W9)
	callers   *callerLeases
	bound     time.Duration
	reconcile time.Duration
	// frameTimeout bounds one JetStream operation on a claim or the
	// lease (defaultFrameTimeout; tests make it longer).
	frameTimeout time.Duration
	// lanes run the JetStream work of claim and lease advisories, a
	// consumer's in order, none behind another's (onAdvisory).
	lanes *lanes
	// The service's: send sends a request's reply and counts it, admit
	// checks the origin of a control request (ops.Origins.Admit), and
	// interrupted is told the calls whose caller went away mid-wait
	// (the durable half sees they become answerable).
	send        func(req *request, msg *nats.Msg, err error)
	admit       func(what string, m *nats.Msg) bool
	interrupted func(keys []waiter.Key)

	leaseID   string // stable for the worker's life: the lease is re-held
	leaseName string // under the same name if NATS drops it
	wf        *waterfall
	adv       *nats.Subscription // claims-stream advisories
	subs      []*nats.Subscription
	stopSync  func()
	replies   sync.WaitGroup // settled waits whose reply and claims are not done
	probes    sync.WaitGroup // claim holders being asked whether they are alive
	probed    *prometheus.CounterVec
	forged    *prometheus.CounterVec // consumers named like claims that are not (genuine)
	untracked *prometheus.CounterVec // timed asks for calls the log does not track (W9)
	leaseMu   sync.Mutex             // serialises re-holding the lease

	mu       sync.Mutex
	lease    *leases.Lease
	stopping bool
}

// newForeground returns the foreground half on nc and js, with the claims
// stream, the live-root registry and the projection. The service sets
// send, admit and interrupted.
func newForeground(nc *nats.Conn, js jetstream.JetStream, claims jetstream.Stream, roots *liveroot.Registry, views *projection.Store, cfg Config, log *slog.Logger) *foregroundHalf {
	id := nuid.Next()
	return &foregroundHalf{
		nc:           nc,
		js:           js,
		claims:       claims,
		log:          log.With("part", "foreground"),
		reg:          waiter.NewRegistry(cfg.Clock),
		clock:        cfg.Clock,
		registry:     roots,
		roots:        liveroot.NewCache(roots, nc, log),
		views:        views,
		callers:      newCallerLeases(nc),
		bound:        cfg.ReleaseBound,
		reconcile:    cfg.ReconcileEvery,
		frameTimeout: defaultFrameTimeout,
		probed: counterVec(cfg.Metrics, prometheus.CounterOpts{
			Name: "holdover_claim_probes_total",
			Help: "Claim holders asked past a claimed wait's deadline whether they are alive, by result: alive, released (no answer in time: the claim was released and deleted), unbound (no subscriber: NATS ends the claim within the release bound) or failed.",
		}, "result"),
		forged: counterVec(cfg.Metrics, prometheus.CounterOpts{
			Name: "holdover_claims_forged_total",
			Help: "Consumers on the claims stream named like a Client's claim that are not one (durable, pull, not on the claim's frame subject, or never ending): deleted, they claimed no wait.",
		}),
		untracked: cfg.Metrics.EventsRejected,
		leaseID:   id,
		leaseName: leases.Name(userquestions.RoleWorker, id),
	}
}

func (f *foregroundHalf) endpoints() []endpoint {
	return []endpoint{
		{name: opAsk, serve: f.ask, repliesLater: true},
		{name: opAskTimed, serve: f.askTimed, repliesLater: true},
		{name: opInflight, serve: f.inflight, fanOut: true},
	}
}

// start holds the worker's lease and subscribes to outcomes, claim
// advisories and caller control before any request can arrive.
func (f *foregroundHalf) start(ctx context.Context) error {
	l, err := leases.Hold(ctx, f.nc, f.js, userquestions.RoleWorker, f.leaseID, f.bound)
	if err != nil {
		return err
	}
	f.lease = l
	if err := f.roots.Start(ctx); err != nil {
		f.endLease()
		return err
	}
	fail := func(err error) error {
		f.roots.Stop()
		f.unsubscribe()
		if f.lanes != nil {
			f.lanes.close()
		}
		if f.wf != nil {
			f.wf.close()
		}
		f.endLease()
		return err
	}
	if f.wf, err = newWaterfall(f.nc, f.leaseName, f.route); err != nil {
		return fail(err)
	}
	f.lanes = newLanes()
	for _, sub := range []struct {
		subject string
		h       nats.MsgHandler
		keep    **nats.Subscription
	}{
		{leases.AdvisoryPrefix + "*." + streams.ClaimsStream + ".*", f.onAdvisory, &f.adv},
		{userquestions.WorkerSubject(f.leaseName, userquestions.VerbAbort), f.onAbort, nil},
		{userquestions.WorkerSubject(f.leaseName, userquestions.VerbStatus), f.onStatus, nil},
	} {
		s, err := f.nc.Subscribe(sub.subject, sub.h)
		if err != nil {
			return fail(holdover.Wrapf(err, holdover.CodeInternal, "subscribe to %s", sub.subject))
		}
		_ = s.SetPendingLimits(-1, -1) // a dropped advisory is a claim nobody releases
		f.subs = append(f.subs, s)
		if sub.keep != nil {
			*sub.keep = s
		}
	}
	if err := userquestions.Flush(ctx, f.nc); err != nil {
		return fail(err)
	}
	f.stopSync = leases.OnReconnect(f.nc, f.reconcile, f.reconcileClaims)
	return nil
}

// stop ends every live wait as if its worker had died, but at once: a
// timed call turns pending, a blocking caller asks again elsewhere.
func (f *foregroundHalf) stop() {
	f.mu.Lock()
	f.stopping = true
	f.mu.Unlock()
	f.stopSync()
	f.unsubscribe()
	f.lanes.close()
	f.abandon()
	f.probes.Wait()
	f.replies.Wait()
	f.wf.close()
	f.roots.Stop()
	f.endLease()
}

// abandoned marks the error a wait ends with when its worker gives it up:
// the worker stops, or lost its lease and so its callers. Its reply then
// carries Holdover-Owner-Stopped: ended, which a caller reads as the loss
// of the worker. It changes neither the code nor the message.
type abandoned struct{ error }

func (a abandoned) Unwrap() error { return a.error }

// abandon ends every live wait because the worker goes away or its
// callers have already given its waits up: a timed call turns pending (the
// question stays answerable) and the caller of a blocking one is told to
// ask again elsewhere.
func (f *foregroundHalf) abandon() int {
	return f.reg.EndAll(func(w *waiter.Wait) error {
		if w.Timed() {
			return abandoned{holdover.New(holdover.CodeAskTimedOut, "the question worker stopped or lost NATS; the question stays answerable")}
		}
		return abandoned{holdover.New(holdover.CodeInternal, "the question worker stopped or lost NATS before the question was answered; ask again")}
	})
}

func (f *foregroundHalf) unsubscribe() {
	for _, sub := range f.subs {
		_ = sub.Unsubscribe()
	}
	f.subs = nil
}

func (f *foregroundHalf) endLease() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	f.mu.Lock()
	l := f.lease
	f.mu.Unlock()
	if err := l.End(ctx); err != nil {
		f.log.Warn("end worker lease", "lease", f.leaseName, ops.Err(err))
	}
}

// errNoCallerLease refuses an ask or askTimed that names no caller lease
// (issue 8, docs/design.md "Every caller holds a lease").
var errNoCallerLease = holdover.Newf(holdover.CodeBadRequest,
	"the request has no %s header naming the caller's lease: ask and askTimed need it, because the lease is how the worker learns "+
		"that its caller is gone (so no wait outlives it) and how the caller learns that the worker is gone (so no call hangs); "+
		"a reply subject says neither", userquestions.HeaderCallerLease)

// ask serves the blocking ask: legacy without a call id, keyed with one
// (M1, M3). Plan review keeps it, with its intent validated (M8).
func (f *foregroundHalf) ask(ctx context.Context, req *request) (any, error) {
	if req.header.Get(userquestions.HeaderCallerLease) == "" {
		return nil, errNoCallerLease
	}
	var in holdover.AskRequest
	if err := decode(req.data, &in); err != nil {
		return nil, err
	}
	return nil, f.begin(ctx, req, in, 0)
}

// askTimed serves a bounded foreground wait (W1, W5, W6).
func (f *foregroundHalf) askTimed(ctx context.Context, req *request) (any, error) {
	if req.header.Get(userquestions.HeaderCallerLease) == "" {
		return nil, errNoCallerLease
	}
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
	ask := holdover.AskRequest{Session: in.Session, CallID: in.CallID, Agent: in.Agent, Questions: in.Questions}
	return nil, f.begin(ctx, req, ask, timeout)
}

// begin checks the ask, starts its wait, tells the caller which worker
// owns it, and publishes its waterfall request. The reply follows when the
// wait settles (finish).
func (f *foregroundHalf) begin(ctx context.Context, req *request, a holdover.AskRequest, timeout time.Duration) error {
	caller := req.header.Get(userquestions.HeaderCallerLease) // checked by ask and askTimed
	if req.reply == "" {
		return holdover.New(holdover.CodeBadRequest, "a question needs a reply subject to answer on")
	}
	if err := checkSession(a.Session); err != nil {
		return err
	}
	if a.CallID != "" {
		if err := userquestions.CheckCall(a.CallID); err != nil {
			return err
		}
	}
	if err := holdover.ValidateQuestions(a.Questions); err != nil {
		return err
	}
	if err := holdover.ValidateIntent(a.Intent, a.Questions); err != nil {
		return err
	}
	// M9. A caller the cache vouches for is checked while its request goes
	// out, which saves the registry read on the way to the Clients; any
	// other is checked before anything is sent.
	vouched := a.Agent != nil && f.roots.Holds(a.Session, *a.Agent)
	if a.Agent != nil && !vouched {
		if err := f.registry.Check(ctx, a.Session, *a.Agent); err != nil {
			return err
		}
	}
	var root *confirmation
	if vouched {
		root = &confirmation{done: make(chan struct{})}
	}
	// What the reply needs of the request, without its body and headers,
	// which a live wait has no reason to keep.
	to := &request{op: req.op, reply: req.reply, received: req.received}
	f.replies.Add(1)
	w, err := f.reg.Start(context.Background(), waiter.Request{
		Key:       waiter.Key{Session: a.Session, CallID: a.CallID},
		ID:        userquestions.NewRequestID(),
		Caller:    caller,
		Timeout:   timeout,
		Questions: a.Questions,
		Intent:    a.Intent,
		Settled:   func(w *waiter.Wait, claims []string) { f.finish(to, w, root, claims) },
	})
	if err != nil {
		f.replies.Done()
		return err
	}
	if root != nil {
		go f.confirm(ctx, root, w, a.Session, *a.Agent)
	}
	if err := f.wf.publish(w); err != nil {
		w.Reject(err)
	}
	// After the request, which is what the latency is measured by: a
	// reply that overtakes this frame simply ends the call first.
	f.sendAccepted(req.reply, w.ID())
	if check, unknown := f.callers.unknown(caller); unknown {
		go f.checkCaller(check)
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
func (f *foregroundHalf) confirm(ctx context.Context, c *confirmation, w *waiter.Wait, sid string, ref holdover.AgentRef) {
	defer close(c.done)
	// Not cut short by Stop: a stopping worker's reply still needs it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), userquestions.DefaultCallTimeout)
	defer cancel()
	if c.err = f.registry.Check(ctx, sid, ref); c.err != nil {
		w.Reject(c.err)
	}
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

// tracked refuses to turn pending a timed wait for a call that Session
// sid's log does not track (W9): no later answer could reach it, so the
// runtime learns it with the cause instead of pending, which would promise
// the user an answerable question. It runs when the wait ends unanswered,
// not beside it, so a call answered in time costs no read. A Session with
// no log at all goes pending: the service used without one has no late
// answer to lose. Each case is counted and logged (a Session with no log
// at info); a check that cannot read the log lets the call go pending.
func (f *foregroundHalf) tracked(ctx context.Context, sid, callID string) error {
	u, untracked, err := f.views.Untracked(ctx, sid, callID)
	switch {
	case err != nil:
		f.log.Warn("could not check that the Session's log tracks a timed call; it goes pending", "session", sid, "call", callID, ops.Err(err))
		return nil
	case !untracked:
		return nil
	}
	f.untracked.WithLabelValues(askTimedLabel, string(u.Reason)).Inc()
	if u.Reason == projection.ReasonNoLog {
		f.log.Info("timed call in a Session with no log went pending; it cannot be answered late", "session", sid, "call", callID, "reason", u.Reason)
		return nil
	}
	f.log.Warn("refused to turn pending a timed call the Session's log does not track; `holdover check` lists the log's problems",
		"session", sid, "call", callID, "reason", u.Reason, "seq", u.Seq, "detail", u.Detail)
	return u.Error()
}

// askTimedLabel is the type label under which holdover_events_rejected_total
// counts the timed calls W9 refused or let go pending untracked, beside
// the event types.
const askTimedLabel = "askTimed"

func (f *foregroundHalf) sendAccepted(reply, requestID string) {
	msg := nats.NewMsg(reply)
	msg.Header.Set(userquestions.HeaderFrame, userquestions.FrameAccepted)
	msg.Data, _ = json.Marshal(userquestions.Accepted{Owner: f.leaseName, RequestID: requestID, ReleaseBoundMs: f.bound.Milliseconds()}) // cannot fail
	if err := f.nc.PublishMsg(msg); err != nil {
		f.log.Warn("send accepted frame", "request", requestID, ops.Err(err))
	}
}

// finish runs once, when w has settled, on the goroutine that settled it:
// it replies to the caller first (that is the latency that matters), then
// tells the Session's answerers the request ended and closes its claims
// (W4, W7). An answer settles on the goroutine that routed it, and is
// replied to there at once, unless the caller's M9 check is still under
// way: that may take a round trip, which the other waits' outcomes must
// not queue behind.
func (f *foregroundHalf) finish(req *request, w *waiter.Wait, root *confirmation, claims []string) {
	if root.pending() || goesPending(w) {
		go f.reply(req, w, root, claims)
		return
	}
	f.reply(req, w, root, claims)
}

// goesPending reports whether settled wait w turns pending (W5), unless
// W9 refuses it: a timed wait that ended ASK_TIMED_OUT, and not because
// its worker gave it up.
func goesPending(w *waiter.Wait) bool {
	_, err := w.Result(context.Background()) // settled: returns at once
	return w.Timed() && holdover.HasCode(err, holdover.CodeAskTimedOut) && !errors.As(err, new(abandoned))
}

func (f *foregroundHalf) reply(req *request, w *waiter.Wait, root *confirmation, claims []string) {
	defer f.replies.Done()
	answers, settleErr := w.Result(context.Background()) // settled: returns at once
	refused := root.wait()
	if refused != nil {
		// The cache vouched for a caller the registry refuses: whatever
		// settled the wait, the caller gets the refusal, never an answer.
		answers, settleErr = nil, refused
	}
	// What the caller gets: the settlement, unless W9 refuses the pending
	// it would be. The Clients' cancel notice still says what ended the wait.
	outcome := settleErr
	if refused == nil && goesPending(w) {
		ctx, cancel := context.WithTimeout(context.Background(), userquestions.DefaultCallTimeout)
		if err := f.tracked(ctx, w.Key().Session, w.Key().CallID); err != nil {
			outcome = err
		}
		cancel()
	}
	var result any
	err := outcome
	if w.Timed() {
		result, err = waiter.TimedOutcome(answers, outcome)
	} else if err == nil {
		result = holdover.Batch{Answers: answers}
	}
	msg, err := replyMsg(req.reply, result, err)
	if errors.As(settleErr, new(abandoned)) {
		if msg.Header == nil {
			msg.Header = nats.Header{}
		}
		msg.Header.Set(userquestions.HeaderOwnerStopped, userquestions.StoppedEndedWait)
	}
	f.send(req, msg, err)

	notice := userquestions.CancelNotice{RequestID: w.ID(), CallID: w.Key().CallID, Reason: userquestions.CancelReason(settleErr)}
	if cerr := f.wf.cancel(w.Key().Session, notice); cerr != nil {
		f.log.Warn("send cancel notice", "request", w.ID(), ops.Err(cerr))
	}
	// Closing takes JetStream round trips, and up to the release bound for
	// a Client that is gone: neither the outcomes of other waits nor the
	// other claims queue behind it.
	for _, name := range claims {
		f.replies.Go(func() { f.closeClaim(context.Background(), name) })
	}
}

// inflight lists this worker's live requests of a Session. Every worker
// answers (the endpoint fans out); the caller merges the lists.
func (f *foregroundHalf) inflight(_ context.Context, req *request) (any, error) {
	var in userquestions.InflightRequest
	if err := decode(req.data, &in); err != nil {
		return nil, err
	}
	if err := checkSession(in.Session); err != nil {
		return nil, err
	}
	waits := f.reg.Session(in.Session)
	out := userquestions.InflightResult{Requests: make([]userquestions.WaterfallRequest, 0, len(waits))}
	for _, w := range waits {
		out.Requests = append(out.Requests, f.wf.request(w))
	}
	return out, nil
}

// route applies one waterfall outcome to its wait. An outcome for a
// request that has ended lost the race and is dropped (W8). A winning
// outcome settles the wait here, and finish replies on this goroutine.
func (f *foregroundHalf) route(requestID string, m *nats.Msg) {
	w, ok := f.reg.ByRequest(requestID)
	if !ok {
		return
	}
	if userquestions.IsNoResponders(m) {
		// Final only for a legacy ask: a timed wait waits out its deadline
		// and a keyed blocking one waits for a Client to join (W6).
		if w.Key().CallID == "" {
			w.NoProvider()
		}
		return
	}
	out, err := userquestions.ParseOutcome(m.Data)
	if err != nil {
		f.log.Warn("drop malformed waterfall outcome", "request", requestID, ops.Err(err))
		return
	}
	switch out.Kind {
	case userquestions.OutcomeSettle:
		// A batch that does not fit the questions answers nothing; the
		// request stays open for a good one.
		if err := holdover.ValidateBatch(w.Questions(), out.Answers); err != nil {
			f.log.Warn("drop answer batch", "request", requestID, ops.Err(err))
			return
		}
		w.Answer(out.Answers)
	case userquestions.OutcomeReject:
		w.Reject(&holdover.Error{Code: out.Error.Code, Message: out.Error.Message})
	case userquestions.OutcomeDelegate:
		f.log.Debug("request delegated", "request", requestID)
	}
}

// onAbort ends a wait whose caller stopped waiting (W5: ASK_ABORTED).
func (f *foregroundHalf) onAbort(m *nats.Msg) {
	if !f.admit(userquestions.VerbAbort, m) {
		return
	}
	if w, ok := f.reg.ByRequest(string(m.Data)); ok {
		w.Reject(holdover.Newf(holdover.CodeAskAborted, "the caller stopped waiting before call %q was answered", w.Key().CallID))
	}
	if m.Reply != "" {
		_ = m.Respond(nil)
	}
}

// onStatus tells a caller whether its request is still live: one that
// reconnected (if not, the reply it was sent was lost while it was cut
// off), or one whose call is past its deadline (caller/backstop.go). Past
// the deadline a live wait is held by Clients' claims, and their holders
// are asked whether they are alive (checkClaims).
func (f *foregroundHalf) onStatus(m *nats.Msg) {
	if !f.admit(userquestions.VerbStatus, m) {
		return
	}
	w, live := f.reg.ByRequest(string(m.Data))
	if !live {
		_ = m.Respond([]byte("gone"))
		return
	}
	_ = m.Respond([]byte("live"))
	if claims := w.ClaimsPastDeadline(); len(claims) > 0 {
		f.checkClaims(w, claims)
	}
}

// checkCaller ends the waits of a caller whose lease is already gone, and
// remembers a lease that exists, unless a deletion may have been advised
// meanwhile or the connection reconnected.
func (f *foregroundHalf) checkCaller(c callerCheck) {
	ctx, cancel := context.WithTimeout(context.Background(), f.bound)
	defer cancel()
	alive, err := leases.Exists(ctx, f.js, c.name)
	switch {
	case err != nil:
		f.log.Warn("check caller lease", "lease", c.name, ops.Err(err))
	case !alive:
		f.callerGone(c.name)
	default:
		f.callers.seen(c)
	}
}

// callerGone ends every wait of a caller that died (W5: ASK_ABORTED), so no
// wait is left without anyone to answer to.
func (f *foregroundHalf) callerGone(name string) {
	f.callers.gone(name)
	var ended []waiter.Key
	n := f.reg.EndCaller(name, func(w *waiter.Wait) error {
		ended = append(ended, w.Key())
		return holdover.Newf(holdover.CodeAskAborted, "the agent waiting on call %q is gone", w.Key().CallID)
	})
	if n > 0 {
		f.log.Info("caller gone; its waits aborted", "lease", name, "waits", n)
		f.interrupted(ended) // their calls stay open: see they become answerable
	}
}

// LiveWaits is the number of foreground waits this worker holds: ask and
// askTimed calls not yet settled. Operators and tests read it to see that
// a gone caller left nothing behind (W7).
func (w *Worker) LiveWaits() int { return w.foreground.reg.Len() }
