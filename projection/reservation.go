package projection

import (
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/inbox"
)

// applyReservations moves the reply reservation of every active call on
// by e, with the transition function inbox owns (D8): a splice of a reply
// queues it, admission, discard or a Turn end release it, and a claim of
// the released reply queues it again.
func (v *View) applyReservations(e events.Event) {
	for i := range v.Active {
		c := &v.Active[i]
		switch c.Logged().Step(c.CallID, e) {
		case inbox.Hold:
			m := e.Body.(*events.InboxSpliced).Message
			c.Queued = &Queued{MessageID: m.ID, Answers: replyAnswers(m, c.Questions), By: m.Source.User, Seq: e.Seq}
			if c.Released != nil && c.Released.MessageID == m.ID {
				c.Released = nil
			}
		case inbox.Release:
			if c.Queued != nil {
				c.Released, c.Queued = c.Queued, nil
			}
		case inbox.Restore:
			c.Queued, c.Released = c.Released, nil
		}
	}
}

// Logged is the call's reply reservation as the log records it.
func (c *Call) Logged() inbox.Logged {
	var l inbox.Logged
	if c.Queued != nil {
		l.Held = c.Queued.MessageID
	}
	if c.Released != nil {
		l.Released = c.Released.MessageID
	}
	return l
}

// Logged is the reply reservation of callID as the log folded into v
// records it: the active call's, or Admitted once a late reply settled
// the call (D5); nothing for a call v does not know.
func (v *View) Logged(callID string) inbox.Logged {
	if c, ok := v.Find(callID); ok {
		return c.Logged()
	}
	if s, ok := v.FindSettled(callID); ok && s.Late {
		return inbox.Logged{Admitted: true}
	}
	return inbox.Logged{}
}

// ShowStored shows q, a reply stored on the call's reply subject that the
// agent has not spliced yet (inbox.Replies.Stored), as the call's queued
// reply, with the stream seq of the reply as its seq: a reader sees that
// the call has a reply waiting, though no runtime read it yet. A View
// shown so is a reader's, never stored: the bucket holds the fold of the
// log only.
func (c *Call) ShowStored(q inbox.Queued) {
	m := q.Message
	c.Queued = &Queued{MessageID: m.ID, Answers: replyAnswers(m, c.Questions), By: m.Source.User, Seq: q.Seq}
}

func (q *Queued) clone() *Queued {
	if q == nil {
		return nil
	}
	c := *q
	c.Answers = cloneAnswers(q.Answers)
	return &c
}
