// Package sessionlog reads and appends Session logs: one JetStream subject
// per Session in the SESSIONS stream, one encoded event per message.
//
// An event's Session seq is the stream sequence of its message in
// SESSIONS, which every Session shares: a Session's seqs grow but skip the
// other Sessions' events, so they are not a count of its own (a
// per-subject counter would need a read to learn). Appends are fenced:
// each names the Session seq of the Session's last event
// (Nats-Expected-Last-Subject-Sequence, which JetStream compares with the
// stream sequence of the subject's last message), so a stale or second
// writer fails with CONFLICT instead of interleaving its events. The
// package never interprets events beyond decoding them.
package sessionlog

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/streams"
)

// PrevHeader carries the Session seq (a SESSIONS stream sequence) of the
// event it was appended after, 0 for a Session's first, so a reader can
// tell whether it has seen every earlier event of the Session.
const PrevHeader = "Holdover-Prev-Seq"

// Log is the set of Session logs in one stream.
type Log struct {
	js     jetstream.JetStream
	stream jetstream.Stream
	// direct reads with direct gets instead of an ordered consumer.
	direct bool
}

// New returns the logs kept in stream (normally the SESSIONS stream).
func New(js jetstream.JetStream, stream jetstream.Stream) *Log {
	return &Log{js: js, stream: stream}
}

// NewDirect returns the logs kept in stream, read with direct gets, one
// message a request, and never a consumer: for a role that may create no
// consumer (the operator, docs/permissions.md), whose tools read one
// Session at a time.
func NewDirect(js jetstream.JetStream, stream jetstream.Stream) *Log {
	return &Log{js: js, stream: stream, direct: true}
}

// Append records e as the event after seq `after` of Session sid (0 for the
// first event) and returns its Session seq. It fails with CONFLICT when the
// Session's last event is not `after`.
func (l *Log) Append(ctx context.Context, sid string, after uint64, e events.Event) (uint64, error) {
	subject, err := streams.EventsSubject(sid)
	if err != nil {
		return 0, err
	}
	data, err := events.Encode(e)
	if err != nil {
		return 0, err
	}
	msg := nats.NewMsg(subject)
	msg.Data = data
	msg.Header.Set(PrevHeader, strconv.FormatUint(after, 10))
	ack, err := l.js.PublishMsg(ctx, msg, jetstream.WithExpectLastSequencePerSubject(after))
	if err != nil {
		if streams.IsConflict(err) {
			return 0, holdover.Wrapf(err, holdover.CodeConflict, "session %s has moved past seq %d: another writer appended first", sid, after)
		}
		return 0, holdover.Wrapf(err, holdover.CodeInternal, "append to session %s", sid)
	}
	return ack.Sequence, nil
}

// Last returns the Session seq of sid's last event, 0 when it has none.
func (l *Log) Last(ctx context.Context, sid string) (uint64, error) {
	subject, err := streams.EventsSubject(sid)
	if err != nil {
		return 0, err
	}
	m, err := l.stream.GetLastMsgForSubject(ctx, subject)
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return 0, nil
	case err != nil:
		return 0, holdover.Wrapf(err, holdover.CodeInternal, "read last event of session %s", sid)
	}
	return m.Sequence, nil
}

// Read returns sid's events after seq `after`, up to its last event at the
// time of the call, in order. An event that no longer decodes is returned
// with its error in bad, never silently dropped.
func (l *Log) Read(ctx context.Context, sid string, after uint64) (evts []events.Event, bad []BadEvent, err error) {
	err = l.each(ctx, sid, after, Page{Events: defaultPageEvents}, func(m Stored) {
		evts, bad = decodeInto(m, evts, bad)
	}, nil)
	if err != nil {
		return nil, nil, err
	}
	return evts, bad, nil
}

// Page bounds what ReadPages hands over at once: at most Events events
// and, when Bytes is set, at most Bytes bytes of stored messages (an event
// larger than that comes in a page of its own).
type Page struct {
	Events int
	Bytes  int
}

// ReadPages hands fn sid's events after seq `after`, up to its last event
// at the time of the call, in order and a page at a time, like Read. No
// more than one page is held while fn runs, so a reader that waits in fn
// for a slow consumer of its own (the gateway, for a Client that reads
// slowly) holds one page of the log, never the whole of it. An error from
// fn ends the read and is returned as it is.
func (l *Log) ReadPages(ctx context.Context, sid string, after uint64, page Page, fn func(evts []events.Event, bad []BadEvent) error) error {
	if page.Events <= 0 {
		page.Events = defaultPageEvents
	}
	var evts []events.Event
	var bad []BadEvent
	return l.each(ctx, sid, after, page, func(m Stored) {
		evts, bad = decodeInto(m, evts, bad)
	}, func() error {
		err := fn(evts, bad)
		evts, bad = nil, nil
		return err
	})
}

// defaultPageEvents is how many messages one fetch asks for.
const defaultPageEvents = 256

// decodeInto decodes m onto evts, or onto bad when it does not decode.
func decodeInto(m Stored, evts []events.Event, bad []BadEvent) ([]events.Event, []BadEvent) {
	e, err := events.Decode(m.Data)
	if err != nil {
		return evts, append(bad, BadEvent{Seq: m.Seq, Err: err})
	}
	e.Seq = m.Seq
	return append(evts, e), bad
}

// Stored is one message of a Session log as it is stored, not decoded.
type Stored struct {
	Seq uint64
	// Prev is the Holdover-Prev-Seq header, when the message carries one
	// that parses (HasPrev).
	Prev    uint64
	HasPrev bool
	Data    []byte
}

// ReadStored returns sid's messages after seq `after`, up to its last at
// the time of the call, in order and as stored: for tools that check what
// a writer recorded rather than what a reader makes of it.
func (l *Log) ReadStored(ctx context.Context, sid string, after uint64) ([]Stored, error) {
	var out []Stored
	err := l.each(ctx, sid, after, Page{Events: defaultPageEvents}, func(m Stored) { out = append(out, m) }, nil)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// each hands fn sid's messages after seq `after`, up to its last message
// at the time of the call, in order, fetching at most a page at a time.
// After each page, once every message of it has gone to fn, it calls
// endPage (when not nil) and stops on its error.
func (l *Log) each(ctx context.Context, sid string, after uint64, page Page, fn func(Stored), endPage func() error) error {
	if endPage == nil {
		endPage = func() error { return nil }
	}
	subject, err := streams.EventsSubject(sid)
	if err != nil {
		return err
	}
	last, err := l.Last(ctx, sid)
	if err != nil || last <= after {
		return err
	}
	if l.direct {
		return l.eachDirect(ctx, sid, subject, after, last, page, fn, endPage)
	}
	cons, err := l.stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects:    []string{subject},
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       after + 1,
		InactiveThreshold: 5 * time.Second,
		// The default retries creating the consumer forever, ignoring ctx,
		// so a closed connection would hang the read; 3 attempts ride out
		// a cluster leader election.
		MaxResetAttempts: 3,
	})
	if err != nil {
		return holdover.Wrapf(err, holdover.CodeInternal, "read session %s", sid)
	}
	// alone is set when the next message is larger than a page's bytes:
	// the server then sends nothing, so it is fetched by itself.
	alone := false
	for retries := 0; ; {
		n := 0
		size, opts := page.Events, []jetstream.FetchOpt{jetstream.FetchMaxWait(5 * time.Second)}
		switch {
		case alone:
			size = 1
		case page.Bytes > 0:
			opts = append(opts, jetstream.FetchMaxBytes(page.Bytes))
		}
		batch, err := cons.Fetch(size, opts...)
		if err == nil {
			for m := range batch.Messages() {
				n++
				s := Stored{Data: m.Data()}
				if meta, merr := m.Metadata(); merr == nil {
					s.Seq = meta.Sequence.Stream
				}
				s.Prev, s.HasPrev = Prev(m.Headers())
				fn(s)
				if s.Seq >= last {
					return endPage()
				}
			}
			err = batch.Error()
		}
		switch {
		case err == nil && n == 0 && page.Bytes > 0 && !alone:
			alone = true
			continue
		case err == nil && n == 0:
			return holdover.Newf(holdover.CodeInternal, "read session %s: no event arrived before seq %d", sid, last)
		case err == nil:
			alone = false
			if err := endPage(); err != nil {
				return err
			}
			continue
		case !transient(err) || retries == maxFetchRetries:
			return holdover.Wrapf(err, holdover.CodeInternal, "read session %s", sid)
		}
		// The next Fetch recreates the consumer after the last event read.
		retries++
		select {
		case <-time.After(fetchRetryDelay << retries):
		case <-ctx.Done():
			return holdover.Wrapf(context.Cause(ctx), holdover.CodeInternal, "read session %s", sid)
		}
	}
}

// eachDirect is each by direct gets: the first message of subject from a
// seq on, until last, a page ending after page.Events messages or once
// they pass page.Bytes.
func (l *Log) eachDirect(ctx context.Context, sid, subject string, after, last uint64, page Page, fn func(Stored), endPage func() error) error {
	n, size := 0, 0
	for from := after + 1; from <= last; {
		m, err := l.stream.GetMsg(ctx, from, jetstream.WithGetMsgSubject(subject))
		if err != nil {
			return holdover.Wrapf(err, holdover.CodeInternal, "read session %s at stream seq %d", sid, from)
		}
		s := Stored{Seq: m.Sequence, Data: m.Data}
		s.Prev, s.HasPrev = Prev(m.Header)
		fn(s)
		from = m.Sequence + 1
		if n, size = n+1, size+len(m.Data); from <= last && (n >= page.Events || page.Bytes > 0 && size >= page.Bytes) {
			if err := endPage(); err != nil {
				return err
			}
			n, size = 0, 0
		}
	}
	return endPage()
}

// A fetch can meet no responders while its consumer moves to another
// server (a cluster node stopped, a leader elected); Read then fetches
// again up to maxFetchRetries times, waiting 2×, 4×, … fetchRetryDelay.
const (
	maxFetchRetries = 5
	fetchRetryDelay = 50 * time.Millisecond
)

func transient(err error) bool {
	return errors.Is(err, nats.ErrNoResponders)
}

// BadEvent is a stored message that does not decode as an event.
type BadEvent struct {
	Seq uint64
	Err error
}

// DecodeMsg decodes a stored Session message and returns its Session seq.
func DecodeMsg(m jetstream.Msg) (events.Event, uint64, error) {
	meta, err := m.Metadata()
	if err != nil {
		return events.Event{}, 0, holdover.Wrap(err, holdover.CodeInternal, "message has no JetStream metadata")
	}
	e, err := events.Decode(m.Data())
	e.Seq = meta.Sequence.Stream
	return e, meta.Sequence.Stream, err
}

// Prev returns the Session seq a stored message was appended after, and
// whether it carried one.
func Prev(h nats.Header) (uint64, bool) {
	v := h.Get(PrevHeader)
	if v == "" {
		return 0, false
	}
	n, err := strconv.ParseUint(v, 10, 64)
	return n, err == nil
}
