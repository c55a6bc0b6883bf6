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

	"github.com/nats-io/nats.go/jetstream"

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

// Answerer takes late answers.
type Answerer struct {
	views        Projection
	reservations *inbox.Reservations
	js           jetstream.JetStream
}

// New returns an Answerer that validates against views, reserves replies
// in reservations and queues them through js.
func New(views Projection, reservations *inbox.Reservations, js jetstream.JetStream) *Answerer {
	return &Answerer{views: views, reservations: reservations, js: js}
}

// Answer answers a continued call late (D6). It returns Accepted false,
// with no error, for a call that is unknown or not continued; REPLY_QUEUED
// while another reply to the call awaits admission; BAD_ANSWER unless the
// batch names every question exactly once (an all-skipped batch is fine).
// An accepted answer is queued in the Session inbox as a user message with
// source user-question-reply and the answer_to_pending_question text, and
// its message id is returned. A bad Session or call id is BAD_REQUEST.
func (a *Answerer) Answer(ctx context.Context, req holdover.AnswerRequest) (holdover.AnswerResult, error) {
	if err := streams.CheckSession(req.Session); err != nil {
		return holdover.AnswerResult{}, err
	}
	if _, err := streams.Token(req.CallID); err != nil {
		return holdover.AnswerResult{}, holdover.Newf(holdover.CodeBadRequest, "call id: %v", err)
	}
	view, err := a.views.CaughtUp(ctx, req.Session)
	if err != nil {
		return holdover.AnswerResult{}, err
	}
	call, ok := view.Find(req.CallID)
	if !ok || call.Status != projection.Continued {
		return holdover.AnswerResult{Accepted: false}, nil
	}
	if q := call.Queued; q != nil {
		return holdover.AnswerResult{}, holdover.Newf(holdover.CodeReplyQueued, "call %s already has a reply (message %s) in the agent's inbox waiting to be admitted", req.CallID, q.MessageID)
	}
	if err := holdover.ValidateBatch(call.Questions, req.Answers); err != nil {
		// REPLY_QUEUED comes first (D6); a valid batch learns it from
		// Reserve below, which saves the read on the common path.
		if held, ok, herr := a.reservations.Held(ctx, req.Session, req.CallID); herr != nil {
			return holdover.AnswerResult{}, herr
		} else if ok {
			return holdover.AnswerResult{}, inbox.ReplyQueued(req.CallID, held)
		}
		return holdover.AnswerResult{}, err
	}
	messageID := "reply-" + rand.Text()
	msg, err := events.NewReply(messageID, req.CallID, call.Questions, req.Answers)
	if err != nil {
		return holdover.AnswerResult{}, err
	}
	msg.Source.User = req.User
	rev, err := a.reservations.Reserve(ctx, req.Session, req.CallID, messageID, view.LastSeq)
	if err != nil {
		return holdover.AnswerResult{}, err
	}
	if _, err := inbox.Publish(ctx, a.js, req.Session, msg); err != nil {
		// The reply is not queued, so it must not block the next answer.
		// Cancel even if ctx ended: that is why the publish failed.
		if cerr := a.reservations.Cancel(context.WithoutCancel(ctx), req.Session, req.CallID, rev); cerr != nil {
			return holdover.AnswerResult{}, holdover.Newf(holdover.CodeInternal, "%v; and the reservation could not be released: %v", err, cerr)
		}
		return holdover.AnswerResult{}, err
	}
	return holdover.AnswerResult{Accepted: true, MessageID: messageID}, nil
}
