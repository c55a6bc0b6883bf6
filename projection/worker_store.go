package projection

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/inbox"
	"github.com/holdover-dev/holdover/sessionlog"
	"github.com/holdover-dev/holdover/streams"
)

// Store reads and writes the userQuestions bucket: one View per Session,
// keyed by the Session id, always equal to the fold of a prefix of that
// Session's log. Writes are compare-and-set on the key's revision, so two
// writers can never interleave a stale View over a newer one.
type Store struct {
	sessions jetstream.Stream
	kv       jetstream.KeyValue
	log      *sessionlog.Log
	// seen holds the Views this Store last wrote or read, so that
	// CaughtUp need not read back, nor decode again, a View the projection
	// worker writing through this Store has just written. Each is a copy
	// of its own, taken as it was written or read, and CaughtUp copies it
	// again for each caller: a copy costs a few allocations where decoding
	// the stored JSON cost a tenth of a late answer (issue 11), and the two
	// agree on everything the JSON says (nil and empty slices encode
	// alike).
	seen *sessionCache[View]
}

// seenViews bounds the Views a Store keeps as seen.
const seenViews = 10_000

// NewStore returns the store over the SESSIONS stream and the
// userQuestions bucket. Share one Store between the projection worker and
// the late answers of a process: the answers then check the Views the
// worker wrote against the log without reading them back.
func NewStore(js jetstream.JetStream, sessions jetstream.Stream, questions jetstream.KeyValue) *Store {
	return newStore(sessions, questions, sessionlog.New(js, sessions))
}

// NewDirectStore returns a store that reads the log with direct gets and
// never a consumer (sessionlog.NewDirect): for the operator's tools
// (holdover inspect, check), whose role may create no consumer.
func NewDirectStore(js jetstream.JetStream, sessions jetstream.Stream, questions jetstream.KeyValue) *Store {
	return newStore(sessions, questions, sessionlog.NewDirect(js, sessions))
}

func newStore(sessions jetstream.Stream, questions jetstream.KeyValue, log *sessionlog.Log) *Store {
	return &Store{sessions: sessions, kv: questions, log: log, seen: newSessionCache[View](seenViews)}
}

// Get returns the stored View of Session sid and whether one is stored.
func (s *Store) Get(ctx context.Context, sid string) (View, bool, error) {
	if err := streams.CheckSession(sid); err != nil {
		return View{}, false, err
	}
	e, err := s.load(ctx, sid)
	if err != nil {
		return View{}, false, err
	}
	if e.unreadable != nil {
		return View{}, true, e.unreadable
	}
	return e.view, e.rev != 0, nil
}

// CaughtUp returns the View of Session sid as of its last event now: the
// stored View with every later event of the log folded in. It writes
// nothing. A caller that must not act on a stale projection (the late
// answer check of D6) reads it here instead of the bucket.
//
// A View this Store wrote or read as of the Session's last event costs
// one read, of that seq. Otherwise the stored View and the seq are asked
// for together, both requests sent before either reply is awaited, so a
// Session the projection worker has caught up with costs one round trip;
// only a View behind the log reads the events in between.
func (s *Store) CaughtUp(ctx context.Context, sid string) (View, error) {
	if err := streams.CheckSession(sid); err != nil {
		return View{}, err
	}
	var e entry
	var last uint64
	var err error
	if seen, ok := s.seen.get(sid); ok {
		if last, err = s.log.Last(ctx, sid); err != nil {
			return View{}, err
		}
		if seen.LastSeq == last {
			return seen.Clone().unproven(), nil
		}
		e, err = s.load(ctx, sid)
	} else {
		e, last, err = s.loadWithLast(ctx, sid)
	}
	if err != nil {
		return View{}, err
	}
	if e.view.LastSeq < last {
		if _, err := s.catchUp(ctx, sid, &e.view); err != nil {
			return View{}, err
		}
	}
	return e.view, nil
}

// Kept returns the View of Session sid this Store last wrote, when the
// projection worker writing through it proved it (View.SessionSeq): what a
// late answer may decide from without reading anything, leaving the proof
// that it is still current to its one fenced write (package steer).
func (s *Store) Kept(sid string) (View, bool) {
	v, ok := s.seen.get(sid)
	if !ok || v.SessionSeq == 0 {
		return View{}, false
	}
	return v.Clone(), true
}

// unproven is v without what the projection worker proved of the whole
// Session beside it (SessionSeq, each call's Reply): the fold of the log
// alone, as CaughtUp hands out.
func (v View) unproven() View {
	v.SessionSeq = 0
	for i := range v.Active {
		v.Active[i].Reply = inbox.Last{}
	}
	return v
}

// Logged returns the reply reservation of call callID of Session sid as
// its log records it up to its last event now (inbox.Log, D8).
func (s *Store) Logged(ctx context.Context, sid, callID string) (inbox.Logged, error) {
	v, err := s.CaughtUp(ctx, sid)
	if err != nil {
		return inbox.Logged{}, err
	}
	return v.Logged(callID), nil
}

// Check returns the stored View of Session sid (the empty View when none
// is stored or the value is unreadable), the fold of its whole log, and
// whether the two are the same.
// They differ while a worker has events left to fold, and when the stored
// value is wrong; [Store.Rebuild] repairs the latter.
func (s *Store) Check(ctx context.Context, sid string) (stored, folded View, equal bool, err error) {
	if err := streams.CheckSession(sid); err != nil {
		return View{}, View{}, false, err
	}
	cur, err := s.load(ctx, sid)
	if err != nil {
		return View{}, View{}, false, err
	}
	folded = New()
	if _, err := s.catchUp(ctx, sid, &folded); err != nil {
		return View{}, View{}, false, err
	}
	return cur.view, folded, cur.unreadable == nil && sameView(cur.view, folded), nil
}

// entry is a View as stored, with the KV revision a compare-and-set write
// must name (0: no value stored). A stored value that does not decode
// loads as the empty View with its revision and the reason in unreadable,
// so a refold from the log can overwrite it.
type entry struct {
	view       View
	rev        uint64
	unreadable error
}

func (s *Store) load(ctx context.Context, sid string) (entry, error) {
	kve, err := s.kv.Get(ctx, sid)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return entry{view: New()}, nil
	case err != nil:
		return entry{}, holdover.Wrapf(err, holdover.CodeInternal, "read %s/%s", streams.QuestionsBucket, sid)
	}
	var v View
	if err := json.Unmarshal(kve.Value(), &v); err != nil {
		return entry{view: New(), rev: kve.Revision(), unreadable: holdover.Wrapf(err, holdover.CodeInternal, "%s/%s revision %d is not a projection View", streams.QuestionsBucket, sid, kve.Revision())}, nil
	}
	s.seen.put(sid, v.Clone())
	return entry{view: v, rev: kve.Revision()}, nil
}

// loadWithLast is load and sessionlog.Log.Last at once: both requests
// are sent before either reply is awaited (nats.go takes their replies on
// one shared subscription), so together they cost one round trip.
func (s *Store) loadWithLast(ctx context.Context, sid string) (entry, uint64, error) {
	var last uint64
	var lastErr error
	read := make(chan struct{})
	go func() {
		defer close(read)
		last, lastErr = s.log.Last(ctx, sid)
	}()
	e, err := s.load(ctx, sid)
	<-read
	if err != nil {
		return entry{}, 0, err
	}
	return e, last, lastErr
}

// save writes v as Session sid's View if the key is still at revision rev
// (0: absent) and returns the new revision. Losing to another writer is a
// CONFLICT error.
func (s *Store) save(ctx context.Context, sid string, rev uint64, v View) (uint64, error) {
	// Compact JSON: indentation would double the stored size, and with it
	// the server's work per write, and halve what fits in one KV value.
	val, err := v.MarshalJSON()
	if err != nil {
		return 0, holdover.Wrapf(err, holdover.CodeInternal, "encode projection of session %s", sid)
	}
	var next uint64
	if rev == 0 {
		next, err = s.kv.Create(ctx, sid, val)
	} else {
		next, err = s.kv.Update(ctx, sid, val, rev)
	}
	switch {
	case streams.IsConflict(err):
		return 0, holdover.Wrapf(err, holdover.CodeConflict, "%s/%s moved past revision %d: another writer wrote first", streams.QuestionsBucket, sid, rev)
	case err != nil:
		return 0, holdover.Wrapf(err, holdover.CodeInternal, "write %s/%s (%d bytes, seq %d)", streams.QuestionsBucket, sid, len(val), v.LastSeq)
	}
	s.seen.put(sid, v.Clone())
	return next, nil
}

// keepProof puts what the projection worker proved of v (SessionSeq, each
// call's Reply) into the kept copy of Session sid, once v is written, unless
// the copy has moved past v since: a proof never turns the copy back.
func (s *Store) keepProof(sid string, v View) {
	s.seen.update(sid, func(kept View) (View, bool) {
		return v.Clone(), kept.LastSeq == v.LastSeq
	})
}

// catchUp folds every event of Session sid's log after v.LastSeq into v
// and returns how many it read. A stored event that no longer decodes is
// passed over like an unknown type: it advances LastSeq and nothing else.
func (s *Store) catchUp(ctx context.Context, sid string, v *View) (int, error) {
	evts, err := s.read(ctx, sid, v.LastSeq)
	if err != nil {
		return 0, err
	}
	for _, e := range evts {
		v.Apply(e)
	}
	return len(evts), nil
}

// sameView compares Views as the bucket stores them.
func sameView(a, b View) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}

// read returns Session sid's events after seq `after`, in order, with each
// stored event that no longer decodes as a blank event of its seq.
func (s *Store) read(ctx context.Context, sid string, after uint64) ([]events.Event, error) {
	evts, bad, err := s.log.Read(ctx, sid, after)
	if err != nil {
		return nil, err
	}
	for _, b := range bad {
		evts = append(evts, events.Event{Seq: b.Seq})
	}
	if len(bad) > 0 {
		slices.SortFunc(evts, func(a, b events.Event) int { return cmp.Compare(a.Seq, b.Seq) })
	}
	return evts, nil
}
