// Package projectiontest is test support for code that reads the
// userQuestions bucket a projection worker writes (D1): it waits, by
// watching the bucket, until a Session's stored View has reached what a
// test needs. It only reads the bucket; it never writes or folds a View.
package projectiontest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover/projection"
)

// patience bounds a wait for the worker; it only turns a hang into a
// failure.
const patience = 10 * time.Second

// Folded waits until Session sid's stored View in kv has folded seq, and
// returns the entry.
func Folded(t testing.TB, kv jetstream.KeyValue, sid string, seq uint64) jetstream.KeyValueEntry {
	t.Helper()
	kve, _ := Await(t, kv, sid, patience, func(v projection.View) bool { return v.LastSeq >= seq },
		"session %s was not folded to seq %d in time", sid, seq)
	return kve
}

// Await watches kv until Session sid's stored View satisfies ok, and
// returns the entry and its View; after within it fails the test with
// failure, formatted with args.
func Await(t testing.TB, kv jetstream.KeyValue, sid string, within time.Duration, ok func(projection.View) bool,
	failure string, args ...any) (jetstream.KeyValueEntry, projection.View) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	w, err := kv.Watch(ctx, sid)
	if err != nil {
		t.Fatalf("watch session %s: %v", sid, err)
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			t.Fatalf(failure, args...)
		case kve := <-w.Updates():
			if kve == nil {
				continue // the end of the initial values
			}
			var v projection.View
			if json.Unmarshal(kve.Value(), &v) == nil && ok(v) {
				return kve, v
			}
		}
	}
}
