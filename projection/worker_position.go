package projection

import (
	"context"
	"sync"

	"github.com/holdover-dev/holdover/inbox"
	"github.com/holdover-dev/holdover/streams"
)

// prove sets v.SessionSeq, and each continued call's Reply, and reports
// whether it did, when it can
// show what the whole Session holds as of v (issue 11: the late answer's
// one write). It reads the last message of every subject of the Session,
// then, only after that, the log's last event and each continued call's
// reply subject: if the log ends at v.LastSeq and no reply subject is past
// the Session's last message, nothing had come after that message when
// the later reads ran, so they read the Session as of it. Anything else
// (a read failed, the Session moved meanwhile) leaves v unproven, which
// costs a late answer a read and nothing else. Only Views with a
// continued call, the ones that take late answers, are proven.
func (w *Worker) prove(ctx context.Context, sid string, v *View) bool {
	var calls []int
	for i := range v.Active {
		if v.Active[i].Status == Continued {
			calls = append(calls, i)
		}
	}
	if len(calls) == 0 {
		return false
	}
	all, err := streams.SessionWildcard(sid)
	if err != nil {
		return false
	}
	last, err := w.store.sessions.GetLastMsgForSubject(ctx, all)
	if err != nil {
		return false
	}
	replies := make([]inbox.Last, len(calls))
	errs := make([]error, len(calls))
	var wg sync.WaitGroup
	for k, i := range calls {
		wg.Go(func() { replies[k], errs[k] = w.replies.Last(ctx, sid, v.Active[i].CallID) })
	}
	lastEvent, err := w.store.log.Last(ctx, sid)
	wg.Wait()
	if err != nil || lastEvent != v.LastSeq {
		return false
	}
	for k := range calls {
		if errs[k] != nil || replies[k].Seq > last.Sequence {
			return false
		}
	}
	for k, i := range calls {
		v.Active[i].Reply = replies[k]
	}
	v.SessionSeq = last.Sequence
	return true
}
