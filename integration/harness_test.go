// Package integration holds end-to-end tests of Holdover on real embedded
// NATS servers, single and clustered. Helpers live in harness_*_test.go;
// tests are named after the part they exercise (projection_*_test.go …).
package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/answerer"
	"github.com/holdover-dev/holdover/caller"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/inbox"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/sessionlog"
	"github.com/holdover-dev/holdover/streams"
)

// sessionLogs appends to Session logs and remembers what the log stores,
// as the pure fold reads it: the truth every projection must converge to.
// Each Session must be appended to by one goroutine at a time.
type sessionLogs struct {
	js       jetstream.JetStream
	sessions jetstream.Stream
	log      *sessionlog.Log

	mu     sync.Mutex
	stored map[string][]events.Event
}

func newSessionLogs(js jetstream.JetStream, sessions jetstream.Stream) *sessionLogs {
	return &sessionLogs{js: js, sessions: sessions, log: sessionlog.New(js, sessions), stored: map[string][]events.Event{}}
}

func (l *sessionLogs) last(sid string) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if log := l.stored[sid]; len(log) > 0 {
		return log[len(log)-1].Seq
	}
	return 0
}

// append writes rec as the next event of Session sid and returns its seq.
// It retries through server trouble (a cluster electing a new leader);
// when a retry finds that an attempt it gave up on was stored after all,
// it counts that one.
func (l *sessionLogs) append(ctx context.Context, sid string, rec logRecord) (uint64, error) {
	after := l.last(sid)
	data := rec.raw
	var ev events.Event
	if rec.body != nil {
		ev = events.New(time.Now(), rec.body)
		var err error
		if data, err = events.Encode(ev); err != nil {
			return 0, err
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	backoff := 20 * time.Millisecond
	uncertain := false
	for {
		seq, err := l.publish(ctx, sid, after, rec, ev, data)
		if holdover.HasCode(err, holdover.CodeConflict) && uncertain {
			seq, err = l.findOwn(ctx, sid, after, data)
		}
		switch {
		case err == nil:
			l.remember(sid, seq, data)
			return seq, nil
		case holdover.HasCode(err, holdover.CodeBadRequest), holdover.HasCode(err, holdover.CodeConflict), time.Now().After(deadline):
			return 0, err
		}
		uncertain = true
		time.Sleep(backoff) // pace retries while the cluster recovers
		backoff = min(2*backoff, time.Second)
	}
}

func (l *sessionLogs) publish(ctx context.Context, sid string, after uint64, rec logRecord, ev events.Event, data []byte) (uint64, error) {
	if rec.body != nil {
		return l.log.Append(ctx, sid, after, ev)
	}
	subject, err := streams.EventsSubject(sid)
	if err != nil {
		return 0, err
	}
	msg := nats.NewMsg(subject)
	msg.Data = data
	msg.Header.Set(sessionlog.PrevHeader, strconv.FormatUint(after, 10))
	ack, err := l.js.PublishMsg(ctx, msg, jetstream.WithExpectLastSequencePerSubject(after))
	var apiErr *jetstream.APIError
	switch {
	case errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence:
		return 0, holdover.Newf(holdover.CodeConflict, "session %s moved past %d", sid, after)
	case errors.Is(err, nats.ErrMaxPayload):
		return 0, holdover.Newf(holdover.CodeBadRequest, "raw event of %d bytes: %v", len(data), err)
	case err != nil:
		return 0, err
	}
	return ack.Sequence, nil
}

// findOwn returns the seq of Session sid's last event if it is data
// appended after `after`: an earlier attempt that was stored.
func (l *sessionLogs) findOwn(ctx context.Context, sid string, after uint64, data []byte) (uint64, error) {
	subject, _ := streams.EventsSubject(sid)
	m, err := l.sessions.GetLastMsgForSubject(ctx, subject)
	if err != nil {
		return 0, err
	}
	if prev, _ := sessionlog.Prev(m.Header); prev == after && bytes.Equal(m.Data, data) {
		return m.Sequence, nil
	}
	return 0, holdover.Newf(holdover.CodeConflict, "session %s has another writer", sid)
}

func (l *sessionLogs) remember(sid string, seq uint64, data []byte) {
	e, err := events.Decode(data)
	if err != nil {
		e = events.Event{} // passed over: it only advances LastSeq
	}
	e.Seq = seq
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stored[sid] = append(l.stored[sid], e)
}

// want returns the fold of Session sid's log, or of its events up to
// seq when seq > 0.
func (l *sessionLogs) want(sid string, upTo uint64) projection.View {
	l.mu.Lock()
	defer l.mu.Unlock()
	log := l.stored[sid]
	if upTo > 0 {
		n := sort.Search(len(log), func(i int) bool { return log[i].Seq > upTo })
		log = log[:n]
	}
	return projection.Fold(log)
}

func (l *sessionLogs) ids() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	ids := make([]string, 0, len(l.stored))
	for sid := range l.stored {
		ids = append(ids, sid)
	}
	sort.Strings(ids)
	return ids
}

func (l *sessionLogs) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, log := range l.stored {
		n += len(log)
	}
	return n
}

func viewJSON(v projection.View) string {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(data)
}

// waitConverged waits, watching the bucket, until the stored View of
// every Session in sids (all Sessions when none is named) equals the fold
// of its whole log. After timeout it fails the test and names each
// Session that differs.
func waitConverged(t testing.TB, kv jetstream.KeyValue, logs *sessionLogs, timeout time.Duration, sids ...string) {
	t.Helper()
	if len(sids) == 0 {
		sids = logs.ids()
	}
	want := map[string]string{}
	for _, sid := range sids {
		want[sid] = viewJSON(logs.want(sid, 0))
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	w, err := kv.WatchAll(ctx)
	require.NoError(t, err)
	defer w.Stop()
	have := map[string]projection.View{}
	differ := func() []string {
		var out []string
		for sid, wj := range want {
			if v, ok := have[sid]; !ok || viewJSON(v) != wj {
				out = append(out, sid)
			}
		}
		sort.Strings(out)
		return out
	}
	for {
		select {
		case <-ctx.Done():
			for _, sid := range differ() {
				t.Errorf("session %s: stored lastSeq %d, log lastSeq %d", sid, have[sid].LastSeq, logs.want(sid, 0).LastSeq)
			}
			t.FailNow()
		case kve := <-w.Updates():
			if kve != nil {
				var v projection.View
				if json.Unmarshal(kve.Value(), &v) == nil {
					have[kve.Key()] = v
				}
			}
			if len(differ()) == 0 {
				return
			}
		}
	}
}

// seenView is one value a watcher saw in the bucket.
type seenView struct {
	sid  string
	view projection.View
}

// recordViews watches the bucket from now on and returns a function that
// stops and yields every value seen.
func recordViews(t testing.TB, kv jetstream.KeyValue) func() []seenView {
	w, err := kv.WatchAll(context.Background(), jetstream.UpdatesOnly())
	require.NoError(t, err)
	var (
		mu   sync.Mutex
		seen []seenView
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		for kve := range w.Updates() {
			var v projection.View
			if kve == nil || json.Unmarshal(kve.Value(), &v) != nil {
				continue
			}
			mu.Lock()
			seen = append(seen, seenView{kve.Key(), v})
			mu.Unlock()
		}
	}()
	return func() []seenView {
		_ = w.Stop()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
}

// requirePrefixFolds checks the projection's safety property: every value
// ever written equals the fold of a prefix of its Session's log.
func requirePrefixFolds(t testing.TB, logs *sessionLogs, seen []seenView) {
	t.Helper()
	for _, s := range seen {
		want := logs.want(s.sid, s.view.LastSeq)
		require.Equal(t, want.LastSeq, s.view.LastSeq, "session %s: stored lastSeq %d is not a seq of its log", s.sid, s.view.LastSeq)
		require.Equal(t, viewJSON(want), viewJSON(s.view), "session %s at seq %d", s.sid, s.view.LastSeq)
	}
}

// fleet runs projection workers, each on its own connection so one can
// crash (lose its connection mid-batch) without touching the others.
type fleet struct {
	t       testing.TB
	url     string
	cfg     projection.WorkerConfig
	metrics *ops.Metrics
	members map[int]*fleetWorker
	next    int
}

type fleetWorker struct {
	nc     *nats.Conn
	cancel context.CancelFunc
	done   chan error
}

func newFleet(t testing.TB, url string, cfg projection.WorkerConfig) *fleet {
	f := &fleet{t: t, url: url, cfg: cfg, metrics: ops.NewMetrics(), members: map[int]*fleetWorker{}}
	f.cfg.Metrics = f.metrics
	if f.cfg.Logger == nil {
		f.cfg.Logger = slog.New(slog.DiscardHandler)
	}
	t.Cleanup(func() {
		for _, id := range f.ids() {
			f.stop(id)
		}
	})
	return f
}

// start runs one more worker and returns its id.
func (f *fleet) start() int {
	f.t.Helper()
	nc, err := nats.Connect(f.url, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	require.NoError(f.t, err)
	js, err := jetstream.New(nc)
	require.NoError(f.t, err)
	ctx := context.Background()
	sessions, err := js.Stream(ctx, streams.SessionsStream)
	require.NoError(f.t, err)
	kv, err := js.KeyValue(ctx, streams.QuestionsBucket)
	require.NoError(f.t, err)
	w := projection.NewWorker(projection.NewStore(js, sessions, kv), inbox.NewReplies(js, sessions, nil), f.cfg)
	ctx, cancel := context.WithCancel(ctx)
	m := &fleetWorker{nc: nc, cancel: cancel, done: make(chan error, 1)}
	go func() { m.done <- w.Run(ctx, func() {}) }()
	f.next++
	f.members[f.next] = m
	return f.next
}

// stop asks worker id to stop and waits; a graceful stop never fails.
func (f *fleet) stop(id int) {
	f.t.Helper()
	m := f.members[id]
	delete(f.members, id)
	m.cancel()
	require.NoError(f.t, <-m.done, "worker %d stops cleanly", id)
	m.nc.Close()
}

// crash drops worker id's connection wherever it is: its unacknowledged
// events come back to the others after AckWait.
func (f *fleet) crash(id int) {
	m := f.members[id]
	delete(f.members, id)
	m.nc.Close()
	err := <-m.done
	m.cancel()
	f.t.Logf("worker %d crashed: %v", id, err)
}

func (f *fleet) ids() []int {
	ids := make([]int, 0, len(f.members))
	for id := range f.members {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	return ids
}

func (f *fleet) String() string { return fmt.Sprint(f.ids()) }

// value reads a counter.
func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}

// newCaller returns a caller Client on nc, holding its caller lease, and
// closes it with the test.
func newCaller(t testing.TB, nc *nats.Conn, cfg caller.Config) *caller.Client {
	t.Helper()
	c, err := caller.New(context.Background(), nc, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close()) })
	return c
}

// newUser returns the Client a user answers late through, as a gateway
// does for its users (nc has a gateway's credentials: an agent may not
// answer), with calls bounded by timeout; it closes with the test.
func newUser(t testing.TB, nc *nats.Conn, timeout time.Duration) *answerer.Client {
	t.Helper()
	a, err := answerer.New(nc, answerer.Config{CallTimeout: timeout})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, a.Close()) })
	return a
}
