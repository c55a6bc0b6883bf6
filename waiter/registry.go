package waiter

import (
	"context"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/holdover-dev/holdover"
)

// Key names the foreground wait of one call.
type Key struct {
	Session string
	CallID  string
}

// Request is everything a wait is asked with: the call it belongs to, who
// waits on it, how long, and what it asks. The registry finds a wait by
// each of them; none changes while the wait is live.
type Request struct {
	// Key is the call. An empty CallID is a legacy ask (M1): counted and
	// ended by the registry, but never found or claimed by key.
	Key Key
	// ID names the wait to the answerers and to its caller (the waterfall
	// request id). It is unique among live waits; empty means none.
	ID string
	// Caller names who waits on the outcome (the caller's lease):
	// [Registry.EndCaller] ends its waits when it is gone.
	Caller string
	// Timeout is the bounded foreground wait of askTimed, at most
	// holdover.MaxTimeout; 0 means no deadline: a keyed blocking ask (M3,
	// timeout -1 in the timed schema) or a legacy ask.
	Timeout time.Duration
	// Questions and Intent are what the wait asks: what a listing of the
	// live waits shows and an answer batch is checked against.
	Questions []holdover.Question
	Intent    *holdover.Intent
	// Settled, when set, is called once when the wait settles, on the
	// goroutine that settled it, after the wait has left the registry:
	// claims are the claims held then whose frames went out (W4), for the
	// transport to close. See [Wait.Framed] for the others.
	Settled func(w *Wait, claims []string)
}

// Registry holds every live wait of one worker, found by call, by request
// id, by Session and by caller. A wait leaves the registry the moment it
// settles (W7), so a second wait for the same call can start right after
// the first one ended, never while it is live (W1).
type Registry struct {
	clock clockwork.Clock

	mu        sync.Mutex
	seq       uint64 // registration order of waits and claims, for Mark
	keyed     map[Key]*Wait
	unkeyed   map[*Wait]struct{}
	byID      map[string]*Wait
	bySession map[string]map[*Wait]struct{}
	byCaller  map[string]map[*Wait]struct{}
}

// NewRegistry returns an empty registry whose waits read time from clock.
func NewRegistry(clock clockwork.Clock) *Registry {
	return &Registry{
		clock:     clock,
		keyed:     make(map[Key]*Wait),
		unkeyed:   make(map[*Wait]struct{}),
		byID:      make(map[string]*Wait),
		bySession: make(map[string]map[*Wait]struct{}),
		byCaller:  make(map[string]map[*Wait]struct{}),
	}
}

// Start creates the live wait for req and starts its deadline. A timed
// wait needs a call id.
//
// The wait's private context keeps parent's values but not its
// cancellation, so expiry cancels only the wait (W5, W7). When parent
// ends, the wait ends with ASK_ABORTED; a parent that has already ended
// fails Start with ASK_ABORTED and creates nothing.
//
// Start fails DUPLICATE_WAIT while a live wait for the same key exists (W1).
func (r *Registry) Start(parent context.Context, req Request) (*Wait, error) {
	switch {
	case req.Timeout < 0 || req.Timeout > holdover.MaxTimeout:
		return nil, holdover.Newf(holdover.CodeBadTimeout, "timeout %v is outside 0..%v", req.Timeout, holdover.MaxTimeout)
	case req.Timeout > 0 && req.Key.CallID == "":
		return nil, holdover.New(holdover.CodeBadRequest, "a timed wait needs a call id")
	case parent.Err() != nil:
		return nil, aborted(parent, req.Key)
	}

	w := newWait(parent, r, req)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := r.add(w); err != nil {
		w.cancel(err)
		return nil, err
	}
	// The timer and the parent watch start under w.mu, so nothing that
	// finds the wait through the registry can claim or settle it half-built.
	if req.Timeout > 0 {
		w.arm(req.Timeout)
	}
	w.stopParent = context.AfterFunc(parent, func() { w.settle(nil, aborted(parent, req.Key)) })
	return w, nil
}

// Get returns the live wait for key.
func (r *Registry) Get(key Key) (*Wait, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w, ok := r.keyed[key]
	return w, ok
}

// ByRequest returns the live wait whose request id is id.
func (r *Registry) ByRequest(id string) (*Wait, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w, ok := r.byID[id]
	return w, ok
}

// Session returns the live waits of sid, keyed or not, in no particular
// order: what a listing of the Session's requests shows.
func (r *Registry) Session(sid string) []*Wait {
	r.mu.Lock()
	defer r.mu.Unlock()
	return members(r.bySession[sid])
}

// Len returns the number of live waits, keyed and unkeyed.
func (r *Registry) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.keyed) + len(r.unkeyed)
}

// Waits returns the live keyed waits, in no particular order. A transport
// uses it to reconcile claims after a reconnect.
func (r *Registry) Waits() []*Wait {
	r.mu.Lock()
	defer r.mu.Unlock()
	ws := make([]*Wait, 0, len(r.keyed))
	for _, w := range r.keyed {
		ws = append(ws, w)
	}
	return ws
}

// Mark returns the registration order reached so far. Waits and claims
// registered later are after the mark: a transport that reconciles against
// a listing taken after Mark leaves them to their own notices, which the
// listing may not reflect yet ([Registry.CallersBefore], [Wait.ClaimsBefore]).
func (r *Registry) Mark() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seq
}

// CallersBefore returns the callers with a live wait registered at or
// before mark.
func (r *Registry) CallersBefore(mark uint64) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var callers []string
	for caller, set := range r.byCaller {
		for w := range set {
			if w.seq <= mark {
				callers = append(callers, caller)
				break
			}
		}
	}
	return callers
}

// EndCaller ends every live wait of caller with the error end returns for
// it, and returns how many it ended. A worker calls it when the caller is
// known to be gone (ASK_ABORTED, W5).
func (r *Registry) EndCaller(caller string, end func(*Wait) error) int {
	r.mu.Lock()
	ws := members(r.byCaller[caller])
	r.mu.Unlock()
	return rejectAll(ws, end)
}

// EndAll ends every live wait, keyed or not, with the error end returns
// for it, and returns how many it ended. A worker calls it when it stops
// or finds its waits given up by their callers.
func (r *Registry) EndAll(end func(*Wait) error) int {
	r.mu.Lock()
	ws := make([]*Wait, 0, len(r.keyed)+len(r.unkeyed))
	for _, w := range r.keyed {
		ws = append(ws, w)
	}
	for w := range r.unkeyed {
		ws = append(ws, w)
	}
	r.mu.Unlock()
	return rejectAll(ws, end)
}

func rejectAll(ws []*Wait, end func(*Wait) error) int {
	ended := 0
	for _, w := range ws {
		if w.Reject(end(w)) {
			ended++
		}
	}
	return ended
}

func (r *Registry) add(w *Wait) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w.key.CallID != "" {
		if _, live := r.keyed[w.key]; live {
			return holdover.Newf(holdover.CodeDuplicateWait,
				"call %q of Session %q already has a live foreground wait", w.key.CallID, w.key.Session)
		}
	}
	if w.id != "" {
		if _, live := r.byID[w.id]; live {
			return holdover.Newf(holdover.CodeInternal, "request id %q already names a live wait", w.id)
		}
		r.byID[w.id] = w
	}
	if w.key.CallID == "" {
		r.unkeyed[w] = struct{}{}
	} else {
		r.keyed[w.key] = w
	}
	addTo(r.bySession, w.key.Session, w)
	if w.caller != "" {
		addTo(r.byCaller, w.caller, w)
	}
	r.seq++
	w.seq = r.seq
	return nil
}

func (r *Registry) remove(w *Wait) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w.key.CallID == "" {
		delete(r.unkeyed, w)
	} else if r.keyed[w.key] == w {
		delete(r.keyed, w.key)
	}
	if w.id != "" && r.byID[w.id] == w {
		delete(r.byID, w.id)
	}
	removeFrom(r.bySession, w.key.Session, w)
	if w.caller != "" {
		removeFrom(r.byCaller, w.caller, w)
	}
}

// nextSeq returns the next registration number, for a new claim.
func (r *Registry) nextSeq() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	return r.seq
}

func addTo(m map[string]map[*Wait]struct{}, key string, w *Wait) {
	set, ok := m[key]
	if !ok {
		set = make(map[*Wait]struct{}, 1)
		m[key] = set
	}
	set[w] = struct{}{}
}

func removeFrom(m map[string]map[*Wait]struct{}, key string, w *Wait) {
	if set := m[key]; set != nil {
		delete(set, w)
		if len(set) == 0 {
			delete(m, key)
		}
	}
}

func members(set map[*Wait]struct{}) []*Wait {
	ws := make([]*Wait, 0, len(set))
	for w := range set {
		ws = append(ws, w)
	}
	return ws
}
