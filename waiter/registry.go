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

// Registry holds every live wait of one worker. A wait leaves the registry
// the moment it settles (W7), so a second wait for the same call can start
// right after the first one ended, never while it is live (W1).
type Registry struct {
	clock clockwork.Clock

	mu      sync.Mutex
	keyed   map[Key]*Wait
	unkeyed map[*Wait]struct{}
}

// NewRegistry returns an empty registry whose waits read time from clock.
func NewRegistry(clock clockwork.Clock) *Registry {
	return &Registry{
		clock:   clock,
		keyed:   make(map[Key]*Wait),
		unkeyed: make(map[*Wait]struct{}),
	}
}

// Start creates the live wait for key and starts its Host deadline.
//
// timeout is the bounded foreground wait of askTimed, at most [holdover.MaxTimeout];
// 0 means no Host deadline: the keyed blocking ask of M3 (timeout -1 in the
// timed schema) or, with an empty key.CallID, a legacy unkeyed ask (M1).
// A timed wait needs a call id.
//
// The wait's private context keeps parent's values but not its
// cancellation, so Host expiry cancels only the wait (W5, W7). When parent
// ends, the wait ends with ASK_ABORTED; a parent that has already ended
// fails Start with ASK_ABORTED and creates nothing.
//
// Start fails DUPLICATE_WAIT while a live wait for the same key exists (W1).
func (r *Registry) Start(parent context.Context, key Key, timeout time.Duration) (*Wait, error) {
	switch {
	case timeout < 0 || timeout > holdover.MaxTimeout:
		return nil, holdover.Newf(holdover.CodeBadTimeout, "timeout %v is outside 0..%v", timeout, holdover.MaxTimeout)
	case timeout > 0 && key.CallID == "":
		return nil, holdover.New(holdover.CodeBadRequest, "a timed wait needs a call id")
	case parent.Err() != nil:
		return nil, aborted(parent, key)
	}

	w := newWait(parent, r, key, timeout)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := r.add(w); err != nil {
		w.cancel(err)
		return nil, err
	}
	// The timer and the parent watch start under w.mu, so nothing that
	// finds the wait through Get can claim or settle it half-built.
	if timeout > 0 {
		w.arm(timeout)
	}
	w.stopParent = context.AfterFunc(parent, func() { w.settle(nil, aborted(parent, key)) })
	return w, nil
}

// Get returns the live wait for key.
func (r *Registry) Get(key Key) (*Wait, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w, ok := r.keyed[key]
	return w, ok
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

// EndAll ends every live wait, keyed or not, with err and returns how many
// it ended. A worker calls it on shutdown.
func (r *Registry) EndAll(err error) int {
	return r.end(err, func(Key) bool { return true })
}

// EndSession ends every live wait of session with err and returns how many
// it ended. A worker calls it when the Session's caller is known to be gone.
func (r *Registry) EndSession(session string, err error) int {
	return r.end(err, func(k Key) bool { return k.Session == session })
}

func (r *Registry) end(err error, match func(Key) bool) int {
	r.mu.Lock()
	var ws []*Wait
	for k, w := range r.keyed {
		if match(k) {
			ws = append(ws, w)
		}
	}
	for w := range r.unkeyed {
		if match(w.key) {
			ws = append(ws, w)
		}
	}
	r.mu.Unlock()

	ended := 0
	for _, w := range ws {
		if w.Reject(err) {
			ended++
		}
	}
	return ended
}

func (r *Registry) add(w *Wait) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w.key.CallID == "" {
		r.unkeyed[w] = struct{}{}
		return nil
	}
	if _, live := r.keyed[w.key]; live {
		return holdover.Newf(holdover.CodeDuplicateWait,
			"call %q of Session %q already has a live foreground wait", w.key.CallID, w.key.Session)
	}
	r.keyed[w.key] = w
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
}
