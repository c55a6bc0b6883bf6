// Package notifytest is a webhook receiver for notifier tests: a real
// HTTP server on loopback that records every request it gets, answers
// with what the test says, and can hold a request open.
package notifytest

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/holdover-dev/holdover/ops"
)

// Request is one POST the receiver got.
type Request struct {
	// Key is the value of the receiver's key header.
	Key    string
	Header http.Header
	Body   []byte
	// Status is what the receiver answered; 0 while it holds the request.
	Status int
	At     time.Time
}

// Receiver records requests and answers each with Respond's status.
type Receiver struct {
	// URL is where to post.
	URL string

	keyHeader string
	mu        sync.Mutex
	requests  []Request
	changed   chan struct{} // closed and replaced on every change
	respond   func(n int, reply http.Header) int
	hold      chan struct{} // non-nil: the next request waits on it
	held      chan struct{} // closed once a request is being held
}

// NewReceiver starts a receiver that reads each request's idempotency
// key from keyHeader and answers 200 to everything until the test says
// otherwise ([Receiver.Respond]); it stops with the test. (The notifier's
// tests use it, so it cannot import the notifier for its header name.)
func NewReceiver(t testing.TB, keyHeader string) *Receiver {
	r := &Receiver{keyHeader: keyHeader, changed: make(chan struct{}), respond: func(int, http.Header) int { return http.StatusOK }}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	r.URL = srv.URL + "/hook/secret-path"
	return r
}

// Respond makes f answer every request from now on: it returns the
// status of request n (0 for the first this receiver got) and may set
// headers of the reply (Retry-After, say).
func (r *Receiver) Respond(f func(n int, reply http.Header) int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.respond = f
}

// HoldNext makes the next request wait, unanswered, until release is
// called or its client goes away; held is closed once it arrived.
func (r *Receiver) HoldNext() (held <-chan struct{}, release func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hold, r.held = make(chan struct{}), make(chan struct{})
	var once sync.Once
	hold := r.hold
	return r.held, func() { once.Do(func() { close(hold) }) }
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	data, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	n := len(r.requests)
	r.requests = append(r.requests, Request{Key: req.Header.Get(r.keyHeader), Header: req.Header.Clone(), Body: data, At: time.Now()})
	hold, held := r.hold, r.held
	r.hold, r.held = nil, nil
	respond := r.respond
	r.notify()
	r.mu.Unlock()
	if hold != nil {
		close(held)
		select {
		case <-hold:
		case <-req.Context().Done():
		}
	}
	status := respond(n, w.Header())
	r.mu.Lock()
	r.requests[n].Status = status
	r.notify()
	r.mu.Unlock()
	w.WriteHeader(status)
}

// notify wakes Await; r.mu is held.
func (r *Receiver) notify() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// Requests returns every request so far.
func (r *Receiver) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Request, len(r.requests))
	copy(out, r.requests)
	return out
}

// Accepted returns the requests answered 2xx.
func (r *Receiver) Accepted() []Request {
	var out []Request
	for _, req := range r.Requests() {
		if req.Status >= 200 && req.Status < 300 {
			out = append(out, req)
		}
	}
	return out
}

// Await waits until done holds for the requests so far, and returns
// them; after within it fails the test with what it got.
func (r *Receiver) Await(t testing.TB, within time.Duration, what string, done func([]Request) bool) []Request {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	for {
		r.mu.Lock()
		changed := r.changed
		r.mu.Unlock()
		got := r.Requests()
		if done(got) {
			return got
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("webhook receiver: waited %v for %s; got %d requests: %v", within, what, len(got), keys(got))
			return nil
		}
	}
}

// Keys returns the distinct keys answered 2xx.
func Keys(reqs []Request) map[string]int {
	out := map[string]int{}
	for _, req := range reqs {
		if req.Status >= 200 && req.Status < 300 {
			out[req.Key]++
		}
	}
	return out
}

func keys(reqs []Request) []string {
	out := make([]string, len(reqs))
	for i, req := range reqs {
		out[i] = req.Key
	}
	return out
}

// Count reads counter family name (holdover_notify_delivered_total, say)
// from m: the sample whose label kind is kind, or the sum of every
// sample when kind is "".
func Count(t testing.TB, m *ops.Metrics, name, kind string) float64 {
	t.Helper()
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatalf("gather metrics: %v", err)
	}
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, s := range f.GetMetric() {
			if kind == "" || slices.ContainsFunc(s.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName() == "kind" && l.GetValue() == kind }) {
				sum += s.GetCounter().GetValue()
			}
		}
	}
	return sum
}
