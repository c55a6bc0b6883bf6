package projection

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/sessionlog"
	"github.com/holdover-dev/holdover/streams"
)

// RebuildStats says what a rebuild did.
type RebuildStats struct {
	Sessions int // Sessions refolded
	Events   int // events read and folded
	Repaired int // stored Views that differed from the fold and were rewritten
}

// rebuildWriters bounds the Views written at once during a rebuild; each
// write mostly waits on the server.
const rebuildWriters = 8

// rebuildFetch is how many events one read of the log returns.
const rebuildFetch = 1024

// Rebuild refolds every Session of the log from its first event and
// writes each View that differs from what is stored.
//
// It reads the stream once, in order, folding all Sessions side by side,
// rather than once per Session: a Session's events are spread over the
// whole stream, so per-Session reads would each touch most of it. A
// Session's View is written, and dropped from memory, as soon as its last
// event is read, so memory holds the Views of Sessions still being read
// (with interleaved logs, up to all of them).
//
// It is safe while workers run: writes are compare-and-set, a worker that
// loses one reloads, and a rebuilt View that finds a newer one stored
// catches up to it before writing, so a rebuild never moves a View back.
// Sessions stored in the bucket but absent from the log are left alone.
func (s *Store) Rebuild(ctx context.Context) (RebuildStats, error) {
	info, err := s.sessions.Info(ctx, jetstream.WithSubjectFilter(streams.AllEvents))
	if err != nil {
		return RebuildStats{}, holdover.Wrap(err, holdover.CodeInternal, "list sessions")
	}
	lastEvent, err := s.sessions.GetLastMsgForSubject(ctx, streams.AllEvents)
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return RebuildStats{}, nil
	case err != nil:
		return RebuildStats{}, holdover.Wrap(err, holdover.CodeInternal, "read the log's last event")
	}
	left := make(map[string]uint64, len(info.State.Subjects)) // events not yet read, per Session
	for subject, n := range info.State.Subjects {
		if sid, ok := sessionOf(subject); ok {
			left[sid] = n
		}
	}
	w := newRebuildWriter(ctx, s)
	views := map[string]*View{}
	read, err := s.scan(ctx, info.State.FirstSeq, lastEvent.Sequence, func(sid string, e events.Event) {
		v := views[sid]
		if v == nil {
			nv := New()
			v = &nv
			views[sid] = v
		}
		v.Apply(e)
		if left[sid]--; left[sid] == 0 {
			w.write(sid, *v)
			delete(views, sid)
		}
	})
	for sid, v := range views { // events deleted meanwhile left these short of their count
		w.write(sid, *v)
	}
	stats, werr := w.wait()
	stats.Events += read
	if err == nil {
		err = werr
	}
	return stats, err
}

// Sessions lists the ids of every Session with events in the log, sorted.
func (s *Store) Sessions(ctx context.Context) ([]string, error) {
	info, err := s.sessions.Info(ctx, jetstream.WithSubjectFilter(streams.AllEvents))
	if err != nil {
		return nil, holdover.Wrap(err, holdover.CodeInternal, "list sessions")
	}
	sids := make([]string, 0, len(info.State.Subjects))
	for subject := range info.State.Subjects {
		if sid, ok := sessionOf(subject); ok {
			sids = append(sids, sid)
		}
	}
	sort.Strings(sids)
	return sids, nil
}

// sessionOf returns the Session a log subject belongs to, if it names a
// valid one; a raw publisher can store a message under a literal wildcard.
func sessionOf(subject string) (string, bool) {
	sid, ok := streams.SessionFromSubject(subject)
	return sid, ok && streams.CheckSession(sid) == nil
}

// scan calls fold for every event of every valid Session stored from seq
// first to last (the log's last event), in order, passing over the inbox
// subjects the stream holds too, and returns how many it read. An event that
// does not decode is passed as a blank, which only advances LastSeq.
func (s *Store) scan(ctx context.Context, first, last uint64, fold func(sid string, e events.Event)) (int, error) {
	if last == 0 || first > last {
		return 0, nil
	}
	cons, err := s.sessions.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects:    []string{streams.AllEvents},
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       first,
		InactiveThreshold: 5 * time.Second,
		MaxResetAttempts:  3,
	})
	if err != nil {
		return 0, holdover.Wrapf(err, holdover.CodeInternal, "read %s", streams.SessionsStream)
	}
	n := 0
	for {
		batch, err := cons.Fetch(rebuildFetch, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return n, holdover.Wrapf(err, holdover.CodeInternal, "read %s", streams.SessionsStream)
		}
		got := 0
		for m := range batch.Messages() {
			got++
			e, seq, derr := sessionlog.DecodeMsg(m)
			if sid, ok := sessionOf(m.Subject()); ok && seq != 0 {
				if derr != nil {
					e = events.Event{Seq: seq}
				}
				fold(sid, e)
				n++
			}
			if seq >= last {
				return n, nil
			}
		}
		if err := batch.Error(); err != nil {
			return n, holdover.Wrapf(err, holdover.CodeInternal, "read %s", streams.SessionsStream)
		}
		if got == 0 {
			return n, holdover.Newf(holdover.CodeInternal, "read %s: no event arrived before seq %d", streams.SessionsStream, last)
		}
	}
}

// rebuildWriter writes rebuilt Views from a few goroutines and tallies
// what it did.
type rebuildWriter struct {
	ctx   context.Context
	store *Store
	jobs  chan rebuilt
	wg    sync.WaitGroup
	mu    sync.Mutex
	stats RebuildStats
	first error
}

type rebuilt struct {
	sid  string
	view View
}

func newRebuildWriter(ctx context.Context, s *Store) *rebuildWriter {
	w := &rebuildWriter{ctx: ctx, store: s, jobs: make(chan rebuilt, rebuildWriters)}
	for range rebuildWriters {
		w.wg.Go(func() {
			for job := range w.jobs {
				caught, repaired, err := w.store.replace(w.ctx, job.sid, job.view)
				w.mu.Lock()
				w.stats.Sessions++
				w.stats.Events += caught
				if repaired {
					w.stats.Repaired++
				}
				if err != nil && w.first == nil {
					w.first = err
				}
				w.mu.Unlock()
			}
		})
	}
	return w
}

func (w *rebuildWriter) write(sid string, v View) { w.jobs <- rebuilt{sid, v} }

func (w *rebuildWriter) wait() (RebuildStats, error) {
	close(w.jobs)
	w.wg.Wait()
	return w.stats, w.first
}

// replace writes v, the fold of Session sid's log up to v.LastSeq, unless
// it is already stored, and returns how many newer events it caught up
// on first. A worker may have written newer events meanwhile: v then
// catches up to them before it overwrites, so a View never moves back.
func (s *Store) replace(ctx context.Context, sid string, v View) (caught int, repaired bool, err error) {
	for {
		cur, err := s.load(ctx, sid)
		if err != nil {
			return caught, false, err
		}
		if cur.view.LastSeq > v.LastSeq {
			n, err := s.catchUp(ctx, sid, &v)
			caught += n
			if err != nil {
				return caught, false, err
			}
		}
		if cur.rev != 0 && cur.unreadable == nil && sameView(cur.view, v) {
			return caught, false, nil
		}
		_, err = s.save(ctx, sid, cur.rev, v)
		if holdover.HasCode(err, holdover.CodeConflict) {
			continue
		}
		return caught, err == nil, err
	}
}
