// Package steer owns the late-answer operation (D6): it decides whether an
// answer to a continued question is accepted and, if so, steers it toward
// the agent as a durable user message in the Session inbox.
//
// It validates against the userQuestions projection caught up to the
// Session's last event, never a stale read. It does not resume the agent
// (D7: resolving the agent is the caller's business, after the answer) and
// it never settles a question: only the agent's admission of the reply does
// (D5).
package steer

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/inbox"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/streams"
)

// Projection is the userQuestions projection. *projection.Store is one.
type Projection interface {
	// CaughtUp returns the View of a Session as of its last event; for a
	// Session the projection worker keeps up with, in one round trip.
	CaughtUp(ctx context.Context, sid string) (projection.View, error)
}

// Keeper is a Projection that also keeps, in memory, the Views its
// projection worker wrote with the Session's position proven
// (projection.View.SessionSeq). *projection.Store is one.
type Keeper interface {
	Kept(sid string) (projection.View, bool)
}

// Answerer takes late answers.
type Answerer struct {
	views   Projection
	replies *inbox.Replies
}

// New returns an Answerer that validates against views and queues
// replies in replies.
func New(views Projection, replies *inbox.Replies) *Answerer {
	return &Answerer{views: views, replies: replies}
}

// maxAttempts bounds how often one answer reads again after its reply
// lost the compare-and-set on the reply subject.
const maxAttempts = 8

// Answer answers a continued call late (D6). It returns Accepted false,
// with no error and with the reason [Refused] gives, for a call that is
// unknown or not continued; REPLY_QUEUED
// while another reply to the call awaits admission; BAD_ANSWER unless the
// batch names every question exactly once (an all-skipped batch is fine).
// An accepted answer is queued on the call's reply subject as a user
// message with source user-question-reply and the
// answer_to_pending_question text, and its message id is returned. A bad
// Session or call id is BAD_REQUEST.
//
// When the projection keeps a proven View of the Session (a Keeper whose
// worker wrote it, projection.View.SessionSeq), the first attempt reads
// nothing: it decides from that View, which holds both halves of the
// reservation (inbox.Check), and publishes once, expecting the Session's
// last message to be still the one the View is as of
// (inbox.Replies.QueueAfter). Stored, that one write proves the View was
// current (D6) and the reservation as it said (D8). Refused (anything
// moved in the Session), or with no proven View kept, the answer reads:
// the View caught up to the Session's last event (one round trip when the
// projection worker keeps up) and publishes expecting the reply subject's
// last message as the answer saw it, so the publish is the reservation
// too (D8), and of concurrent answers one is stored. Without a kept View
// the first such attempt takes the reply subject to be empty, as it is
// until the call's first reply, and leaves the check to the publish; only
// when the publish finds it otherwise is the subject read, together with
// the View, and the answer decided again.
func (a *Answerer) Answer(ctx context.Context, req holdover.AnswerRequest) (holdover.AnswerResult, error) {
	if err := streams.CheckSession(req.Session); err != nil {
		return holdover.AnswerResult{}, err
	}
	if _, err := streams.Token(req.CallID); err != nil {
		return holdover.AnswerResult{}, holdover.Wrap(err, holdover.CodeBadRequest, "call id")
	}
	messageID := "reply-" + rand.Text()
	res, done, moved, err := a.answerKept(ctx, req, messageID)
	if done || err != nil {
		return res, err
	}
	readLast := moved // the Session moved: the reply subject may hold something
	for range maxAttempts {
		view, last, err := a.read(ctx, req.Session, req.CallID, readLast)
		if err != nil {
			return holdover.AnswerResult{}, err
		}
		if last.MessageID == messageID {
			// An earlier attempt was stored, its acknowledgement lost.
			return holdover.AnswerResult{Accepted: true, MessageID: messageID}, nil
		}
		msg, expect, refused, err := decide(view, &last, req, messageID)
		switch {
		case refused != nil:
			return *refused, nil
		case holdover.HasCode(err, holdover.CodeBadAnswer) && !readLast:
			readLast = true // REPLY_QUEUED comes first (D6): read the subject to tell
			continue
		case err != nil:
			return holdover.AnswerResult{}, err
		}
		_, err = a.replies.Queue(ctx, req.Session, req.CallID, msg, expect)
		if !holdover.HasCode(err, holdover.CodeConflict) {
			if err != nil {
				return holdover.AnswerResult{}, err
			}
			return holdover.AnswerResult{Accepted: true, MessageID: messageID}, nil
		}
		readLast = true // a reply or a marker is there: decide on what it is
	}
	return holdover.AnswerResult{}, holdover.Newf(holdover.CodeConflict, "the reply subject of call %s kept changing under %d attempts to answer it", req.CallID, maxAttempts)
}

// decide makes the decision on the late answer req from view, a View of
// its Session, and last, the last message of the call's reply subject as
// read; nil takes the View's own record of it (a proven View holds both
// halves of the reservation, inbox.Check). It returns the reply to queue,
// under messageID, with the reply subject's sequence its publish expects;
// or the refusal of a call that takes no answer ([Refused]); or the error:
// REPLY_QUEUED while another reply awaits admission, then BAD_ANSWER for a
// batch that does not fit the call's questions.
func decide(view projection.View, last *inbox.Last, req holdover.AnswerRequest, messageID string) (reply events.Message, expect uint64, refused *holdover.AnswerResult, err error) {
	call, ok := view.Find(req.CallID)
	if !ok || call.Status != projection.Continued {
		r := Refused(view, req.CallID)
		return events.Message{}, 0, &r, nil
	}
	if last == nil {
		last = &call.Reply
	}
	if expect, err = inbox.Check(req.CallID, call.Logged(), *last); err != nil {
		return events.Message{}, 0, nil, err
	}
	if err := holdover.ValidateBatch(call.Questions, req.Answers); err != nil {
		return events.Message{}, 0, nil, err
	}
	if reply, err = events.NewReply(messageID, req.CallID, call.Questions, req.Answers); err != nil {
		return events.Message{}, 0, nil, err
	}
	reply.Source.User = req.User
	return reply, expect, nil, nil
}

// Refused is the refusal of a late answer to callID, which view holds as
// no continued call: CALL_SETTLED for a settled call, CALL_OPEN for an
// open one, CALL_UNKNOWN for one it does not track. An open call whose
// Session no agent serves is NO_AGENT, which only who resolves agents
// can tell (D7: the worker).
func Refused(view projection.View, callID string) holdover.AnswerResult {
	code, why := holdover.CodeCallUnknown, "no ask_user_question call with this id is open or continued in the Session (never recorded, its arguments not a valid ask, or its result an error)"
	if s, ok := view.FindSettled(callID); ok {
		code, why = holdover.CodeCallSettled, "it is answered already, in time; it takes no more answers"
		if s.Late {
			code, why = holdover.CodeCallSettled, "it is answered already, by a late reply the agent admitted; it takes no more answers"
		}
	} else if _, ok := view.Find(callID); ok {
		code, why = holdover.CodeCallOpen, "it is still open: the agent may be waiting on it, so answer it through its card; it takes a late answer once it continues"
	} else if !view.Timed {
		why = "the Session's last request/header does not offer the timed ask_user_question tool (with timeout), so none of its questions is answerable late"
	}
	return holdover.AnswerResult{Accepted: false, Reason: &holdover.Error{Code: code, Message: fmt.Sprintf("call %s takes no answer: %s", callID, why)}}
}

// read returns the caught-up View of sid and, when withLast, the last
// message of the reply subject of callID, both asked for at once.
func (a *Answerer) read(ctx context.Context, sid, callID string, withLast bool) (projection.View, inbox.Last, error) {
	var last inbox.Last
	var lastErr error
	var wg sync.WaitGroup
	if withLast {
		wg.Go(func() { last, lastErr = a.replies.Last(ctx, sid, callID) })
	}
	view, err := a.views.CaughtUp(ctx, sid)
	wg.Wait()
	if err == nil {
		err = lastErr
	}
	return view, last, err
}

// answerKept is the one-write attempt of Answer from the proven View the
// projection keeps, if any. It reports done when the answer is queued,
// and moved when its write was refused because the Session moved; it
// leaves everything else (no proven View, a refusal the View would give,
// a fence the Session moved past) to the reading attempts, because only a
// stored write proves the View current: a refusal decided from it alone
// could be stale.
func (a *Answerer) answerKept(ctx context.Context, req holdover.AnswerRequest, messageID string) (res holdover.AnswerResult, done, moved bool, err error) {
	k, ok := a.views.(Keeper)
	if !ok {
		return holdover.AnswerResult{}, false, false, nil
	}
	view, ok := k.Kept(req.Session)
	if !ok {
		return holdover.AnswerResult{}, false, false, nil
	}
	msg, _, refused, err := decide(view, nil, req, messageID)
	if refused != nil || err != nil {
		return holdover.AnswerResult{}, false, false, nil
	}
	_, err = a.replies.QueueAfter(ctx, req.Session, req.CallID, msg, view.SessionSeq)
	switch {
	case err == nil:
		return holdover.AnswerResult{Accepted: true, MessageID: messageID}, true, false, nil
	case holdover.HasCode(err, holdover.CodeConflict):
		return holdover.AnswerResult{}, false, true, nil // something moved: read and decide again
	}
	return holdover.AnswerResult{}, false, false, err
}
