package sessionlog_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/sessionlog"
	"github.com/holdover-dev/holdover/streams"
)

// start runs a server with the topology and returns its Session logs.
func start(t *testing.T) (*sessionlog.Log, *embeddedtest.Env) {
	env := embeddedtest.Start(t, streams.Config{Memory: true})
	return sessionlog.New(env.JS, env.Topology.Sessions), env
}

func TestAppendIsFencedAndReadReturnsTheSession(t *testing.T) {
	log, _ := start(t)
	ctx := context.Background()
	at := time.Unix(1700000000, 0).UTC()

	var last uint64
	for i := range 5 {
		seq, err := log.Append(ctx, "a", last, events.New(at, &events.StepEnd{Turn: "t", Step: i}))
		require.NoError(t, err)
		last = seq
	}
	_, err := log.Append(ctx, "b", 0, events.New(at, &events.TurnStart{Turn: "t"}))
	require.NoError(t, err)
	_, err = log.Append(ctx, "b", 0, events.New(at, &events.TurnStart{Turn: "t2"}))
	require.Equal(t, holdover.CodeConflict, holdover.CodeOf(err), "a writer that names a stale seq is fenced out")
	_, err = log.Append(ctx, "a", 3, events.New(at, &events.TurnEnd{Turn: "t"}))
	require.Equal(t, holdover.CodeConflict, holdover.CodeOf(err))

	got, bad, err := log.Read(ctx, "a", 0)
	require.NoError(t, err)
	require.Empty(t, bad)
	require.Len(t, got, 5)
	for i, e := range got {
		require.Equal(t, i, e.Body.(*events.StepEnd).Step)
	}
	tail, _, err := log.Read(ctx, "a", got[2].Seq)
	require.NoError(t, err)
	require.Len(t, tail, 2)
	require.Equal(t, got[3].Seq, tail[0].Seq)

	n, err := log.Last(ctx, "b")
	require.NoError(t, err)
	require.NotZero(t, n)
	none, _, err := log.Read(ctx, "nobody", 0)
	require.NoError(t, err)
	require.Empty(t, none)
}

func TestStoredMessageNamesItsPredecessor(t *testing.T) {
	log, env := start(t)
	ctx := context.Background()
	first, err := log.Append(ctx, "s", 0, events.New(time.Now(), &events.TurnStart{Turn: "t"}))
	require.NoError(t, err)
	second, err := log.Append(ctx, "s", first, events.New(time.Now(), &events.TurnEnd{Turn: "t"}))
	require.NoError(t, err)
	m, err := env.Topology.Sessions.GetMsg(ctx, second)
	require.NoError(t, err)
	prev, ok := sessionlog.Prev(m.Header)
	require.True(t, ok)
	require.Equal(t, first, prev)
}

func TestReadReportsUndecodableEvents(t *testing.T) {
	log, env := start(t)
	ctx := context.Background()
	subj, _ := streams.EventsSubject("s")
	_, err := env.JS.Publish(ctx, subj, []byte("{not json"))
	require.NoError(t, err)
	_, err = env.JS.Publish(ctx, subj, []byte(`{"type":"future/thing","at":"2026-01-01T00:00:00Z","data":{}}`))
	require.NoError(t, err)
	got, bad, err := log.Read(ctx, "s", 0)
	require.NoError(t, err)
	require.Len(t, bad, 1)
	require.Len(t, got, 1)
	require.False(t, got[0].Known(), "an unknown type is kept and passed over")
}

// ReadStored returns what writers stored, headers and all, whether or not
// it decodes, and only the Session's own messages.
func TestReadStoredReturnsMessagesAsStored(t *testing.T) {
	log, env := start(t)
	ctx := context.Background()
	first, err := log.Append(ctx, "s", 0, events.New(time.Now(), &events.TurnStart{Turn: "t"}))
	require.NoError(t, err)
	_, err = log.Append(ctx, "other", 0, events.New(time.Now(), &events.TurnStart{Turn: "t"}))
	require.NoError(t, err)
	subj, _ := streams.EventsSubject("s")
	raw, err := env.JS.Publish(ctx, subj, []byte("{not json")) // a raw publisher: no Holdover-Prev-Seq
	require.NoError(t, err)

	got, err := log.ReadStored(ctx, "s", 0)
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, first, got[0].Seq)
	require.True(t, got[0].HasPrev)
	require.Equal(t, uint64(0), got[0].Prev)
	require.Contains(t, string(got[0].Data), `"turn/start"`)
	require.Equal(t, raw.Sequence, got[1].Seq)
	require.False(t, got[1].HasPrev)
	require.Equal(t, "{not json", string(got[1].Data))

	after, err := log.ReadStored(ctx, "s", first)
	require.NoError(t, err)
	require.Len(t, after, 1)
	none, err := log.ReadStored(ctx, "nobody", 0)
	require.NoError(t, err)
	require.Empty(t, none)
}

// A fenced-out append says CONFLICT and still is the server's refusal
// underneath: errors.As reaches the JetStream API error (10071), so a
// caller can tell "another writer won" from any other failure by code or
// by cause.
func TestAppendConflictKeepsTheServersRefusal(t *testing.T) {
	log, _ := start(t)
	ctx := context.Background()
	_, err := log.Append(ctx, "s", 0, events.New(time.Now(), &events.TurnStart{Turn: "t"}))
	require.NoError(t, err)

	_, err = log.Append(ctx, "s", 0, events.New(time.Now(), &events.TurnStart{Turn: "t2"}))
	require.Equal(t, holdover.CodeConflict, holdover.CodeOf(err))
	require.True(t, streams.IsConflict(err))
	var apiErr *jetstream.APIError
	require.True(t, errors.As(err, &apiErr), "the cause is kept: %v", err)
	require.Equal(t, jetstream.JSErrCodeStreamWrongLastSequence, apiErr.ErrorCode)
	require.ErrorContains(t, err, apiErr.Error(), "the message ends with the cause's")
}

// A read whose context ends is INTERNAL to a client and still
// context.Canceled (or DeadlineExceeded) to errors.Is, so a component
// stopping does not log its own shutdown as a failure.
func TestReadKeepsTheContextsEnd(t *testing.T) {
	log, _ := start(t)
	_, err := log.Append(context.Background(), "s", 0, events.New(time.Now(), &events.TurnStart{Turn: "t"}))
	require.NoError(t, err)

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err = log.Read(cancelled, "s", 0)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, holdover.CodeInternal, holdover.CodeOf(err))
	_, err = log.ReadStored(cancelled, "s", 0)
	require.ErrorIs(t, err, context.Canceled)

	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	_, err = log.Last(expired, "s")
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

// A log read by direct gets (the operator's, which may create no
// consumer) returns what one read through a consumer does: the Session's
// own messages among others', in order, from any seq, undecodable ones
// reported as bad.
func TestDirectReadsWhatAConsumerReads(t *testing.T) {
	log, env := start(t)
	direct := sessionlog.NewDirect(env.JS, env.Topology.Sessions)
	ctx := context.Background()
	subj, _ := streams.EventsSubject("s")
	var last, other uint64
	for i := range 6 {
		seq, err := log.Append(ctx, "s", last, events.New(time.Now(), &events.StepEnd{Turn: "t", Step: i}))
		require.NoError(t, err)
		last = seq
		other, err = log.Append(ctx, "other", other, events.New(time.Now(), &events.StepEnd{Turn: "o", Step: i}))
		require.NoError(t, err)
		if i == 2 {
			raw, err := env.JS.Publish(ctx, subj, []byte("{not json"))
			require.NoError(t, err)
			last = raw.Sequence
		}
	}
	for _, after := range []uint64{0, 3, last - 1, last} {
		want, err := log.ReadStored(ctx, "s", after)
		require.NoError(t, err)
		got, err := direct.ReadStored(ctx, "s", after)
		require.NoError(t, err)
		require.Equal(t, want, got, "after %d", after)
		wantEvts, wantBad, err := log.Read(ctx, "s", after)
		require.NoError(t, err)
		gotEvts, gotBad, err := direct.Read(ctx, "s", after)
		require.NoError(t, err)
		require.Equal(t, len(wantBad), len(gotBad), "after %d", after)
		for i := range wantBad {
			require.Equal(t, wantBad[i].Seq, gotBad[i].Seq)
		}
		require.Equal(t, len(wantEvts), len(gotEvts))
		for i := range wantEvts {
			require.Equal(t, wantEvts[i].Seq, gotEvts[i].Seq)
			require.Equal(t, wantEvts[i].Data, gotEvts[i].Data)
		}
	}
	all, err := direct.ReadStored(ctx, "s", 0)
	require.NoError(t, err)
	require.Len(t, all, 7)
}

// ReadPages hands the log over a page at a time, each within its bounds,
// an event larger than a page's bytes in a page of its own, every event
// once and in order; an error from the reader ends the read.
func TestReadPagesHandsTheLogOverInBoundedPages(t *testing.T) {
	log, _ := start(t)
	ctx := context.Background()
	at := time.Unix(1700000000, 0).UTC()
	text := func(n int) []events.Part { return events.Text(strings.Repeat("x", n)) }
	var last uint64
	var want []uint64
	for i := range 40 {
		size := 1 << 10
		if i == 17 {
			size = 20 << 10 // over a page's bytes
		}
		seq, err := log.Append(ctx, "s", last, events.New(at, &events.AssistantMessage{ID: fmt.Sprint("a", i), Content: text(size)}))
		require.NoError(t, err)
		last = seq
		want = append(want, seq)
	}

	page := sessionlog.Page{Events: 8, Bytes: 8 << 10}
	var got []uint64
	pages := 0
	require.NoError(t, log.ReadPages(ctx, "s", 0, page, func(evts []events.Event, bad []sessionlog.BadEvent) error {
		pages++
		require.Empty(t, bad)
		require.NotEmpty(t, evts)
		require.LessOrEqual(t, len(evts), page.Events)
		size := 0
		for _, e := range evts {
			size += len(e.Data)
			got = append(got, e.Seq)
		}
		if len(evts) > 1 {
			require.LessOrEqual(t, size, page.Bytes, "only an event over a page's bytes comes alone")
		}
		return nil
	}))
	require.Equal(t, want, got)
	require.GreaterOrEqual(t, pages, 40/7, "8 KiB pages of 1 KiB events")

	stop := errors.New("enough")
	read := 0
	err := log.ReadPages(ctx, "s", want[9], sessionlog.Page{Events: 4}, func(evts []events.Event, _ []sessionlog.BadEvent) error {
		read += len(evts)
		return stop
	})
	require.ErrorIs(t, err, stop)
	require.Equal(t, 4, read, "the read ends with the first page")
}
