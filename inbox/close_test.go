package inbox_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/inbox"
)

// Issue 25: nothing of a Reader outlives its Close, not even the recovery
// of a consumer that vanished (which retries until the reader closes, and
// logged after Close when it was not waited for: a data race a test hit).
// Close stops following the Sessions still followed, too.
func TestNothingOfAReaderOutlivesClose(t *testing.T) {
	r := newReplyRig(t)
	leaks := embeddedtest.Leaks(t, r.env.Conn)
	log := &watchLog{vanished: make(chan struct{}, 1)}
	rd, err := inbox.NewReader(r.env.Topology.Sessions, inbox.ReaderConfig{Name: "rt1", ShardSize: 2, Logger: slog.New(log)})
	require.NoError(t, err)
	gots := make([]*got, 4)
	for i := range gots {
		gots[i] = &got{}
		_, err := rd.Follow(r.ctx, fmt.Sprintf("s%d", i), 0, gots[i].deliver)
		require.NoError(t, err)
		_, err = inbox.Publish(r.ctx, r.env.JS, fmt.Sprintf("s%d", i), steered(fmt.Sprintf("m%d", i)))
		require.NoError(t, err)
	}
	for _, g := range gots {
		require.Eventually(t, g.has(1), 5*time.Second, 10*time.Millisecond)
	}
	require.NoError(t, r.env.Topology.Sessions.DeleteConsumer(r.ctx, "inbox-rt1-0"))
	select {
	case <-log.vanished: // its recovery runs
	case <-time.After(10 * time.Second):
		t.Fatal("the reader did not see its consumer vanish")
	}
	require.NoError(t, rd.Close())
	log.closed.Store(true)
	goleak.VerifyNone(t, leaks...)
	require.False(t, log.after.Load(), "nothing logged after Close")
	for name := range r.env.Topology.Sessions.ConsumerNames(context.Background()).Name() {
		t.Errorf("consumer %s outlived the reader", name)
	}
}

// watchLog is a slog handler that tells when the reader sees a consumer
// vanish, and whether it logs anything once closed.
type watchLog struct {
	vanished chan struct{}
	closed   atomic.Bool
	after    atomic.Bool
}

func (l *watchLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *watchLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *watchLog) WithGroup(string) slog.Handler            { return l }
func (l *watchLog) Handle(_ context.Context, rec slog.Record) error {
	if l.closed.Load() {
		l.after.Store(true)
	}
	if strings.Contains(rec.Message, "vanished") {
		select {
		case l.vanished <- struct{}{}:
		default:
		}
	}
	return nil
}
