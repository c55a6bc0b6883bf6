package projection

import (
	"context"

	"github.com/holdover-dev/holdover/inbox"
)

// The projection worker is the one follower of the Session logs, and it
// keeps the reply reservations' markers as well as the Views (D8): before
// it writes a View, it marks on each call's reply subject what the events
// it folded did to the call's reply, so a reply subject is never behind
// the stored View. A fold that is delivered again marks nothing twice
// (the markers are idempotent), and a reader that folds the log beyond the
// stored View (CaughtUp) sees the rest.

// reservationsOf is what the reservation markers are decided from: the
// log's side of every active call's reservation in v.
func reservationsOf(v View) []callLogged {
	out := make([]callLogged, len(v.Active))
	for i := range v.Active {
		out[i] = callLogged{callID: v.Active[i].CallID, logged: v.Active[i].Logged()}
	}
	return out
}

type callLogged struct {
	callID string
	logged inbox.Logged
}

// mark is one marker a fold owes a reply subject.
type mark struct {
	callID, messageID string
	marker            inbox.Marker
}

// marks lists the markers that folding from a View with reservations
// before, at Session seq from, into after owes the reply subjects:
//
//   - a reply the log released (discard, Turn end) is marked released;
//   - a call a late reply settled (admission) has whatever holds it
//     released (messageID "");
//   - a reply that was released before and is held again (a claim of it
//     after a restart) is marked restored.
//
// A reply the log holds from its splice needs no marker: the subject holds
// it already, since it was queued there.
func marks(before []callLogged, from uint64, after View) []mark {
	var out []mark
	for i := range after.Active {
		c := &after.Active[i]
		was, now := loggedOf(before, c.CallID), c.Logged()
		switch {
		case now.Held != "" && now.Held != was.Held && now.Held == was.Released:
			out = append(out, mark{c.CallID, now.Held, inbox.Restored})
		case now.Held == "" && now.Released != "" && (was.Held != "" || was.Released != now.Released):
			out = append(out, mark{c.CallID, now.Released, inbox.Released})
		}
	}
	// Settled calls are appended as they settle, so those settled by this
	// fold are at the end.
	for i := len(after.Settled) - 1; i >= 0 && after.Settled[i].Seq > from; i-- {
		if s := after.Settled[i]; s.Late {
			out = append(out, mark{s.CallID, "", inbox.Released})
		}
	}
	return out
}

func loggedOf(cs []callLogged, callID string) inbox.Logged {
	for _, c := range cs {
		if c.callID == callID {
			return c.logged
		}
	}
	return inbox.Logged{}
}

// writeMarks writes the markers the fold of sid from before (at seq from)
// to after owes, in order, each as of after.LastSeq.
func (w *Worker) writeMarks(ctx context.Context, sid string, before []callLogged, from uint64, after View) error {
	for _, m := range marks(before, from, after) {
		var err error
		var wrote bool
		switch m.marker {
		case inbox.Restored:
			wrote, err = w.replies.Restore(ctx, sid, m.callID, m.messageID, after.LastSeq)
		default:
			wrote, err = w.replies.Release(ctx, sid, m.callID, m.messageID, after.LastSeq)
		}
		if err != nil {
			return err
		}
		if wrote {
			w.marked.WithLabelValues(string(m.marker)).Inc()
		}
	}
	return nil
}
