package bench

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/streams"
)

// Run measures every row, in order: askTimed → Client delivery, Client
// answer → result, late answer → reply durable; calls samples each. Each
// row goes to measured as soon as it is known.
func (r *Rig) Run(ctx context.Context, calls int, measured func(Row)) error {
	rows, err := r.Foreground(ctx, calls)
	if err != nil {
		return err
	}
	for _, row := range rows {
		measured(row)
	}
	late, err := r.LateAnswer(ctx, calls)
	if err != nil {
		return err
	}
	measured(late)
	return nil
}

// Foreground measures n timed Questions answered in time in one Session,
// beside a core request-reply between two admin connections of their own.
func (r *Rig) Foreground(ctx context.Context, n int) ([]Row, error) {
	roundTrip, err := r.roundTrip()
	if err != nil {
		return nil, err
	}
	sid := r.Session("foreground", 0)
	r.forget(sid)
	ref, err := r.live(ctx, sid)
	if err != nil {
		return nil, err
	}
	call, stop, err := ForegroundCalls(ctx, r.calls, r.answering, sid, ref)
	if err != nil {
		return nil, err
	}
	defer stop()
	return Foreground(ctx, call, roundTrip, n)
}

// LateAnswer measures n late answers, each to a Session of its own,
// beside a synchronous publish of the same reply on a reply subject of
// the same stream.
func (r *Rig) LateAnswer(ctx context.Context, n int) (Row, error) {
	if n < 1 {
		return Row{}, holdover.Newf(holdover.CodeBadRequest, "measure at least one answer, not %d", n)
	}
	sids := make([]string, n)
	for i := range sids {
		sids[i] = r.Session("late", i)
		r.forget(sids[i])
	}
	answer, err := LateAnswers(ctx, Continued{Log: r.logs, Roots: r.roots, Instance: r.instance, Tool: r.tool, Store: r.store}, r.answering, sids)
	if err != nil {
		return Row{}, err
	}
	rawSid := r.Session("late-raw", 0)
	r.forget(rawSid)
	raw, err := ReplyPublisher(ctx, r.adminJS, rawSid, LateCall, Questions, Answers)
	if err != nil {
		return Row{}, err
	}
	return LateAnswer(ctx, answer, raw, n)
}

// roundTrip is a core request-reply between two admin connections of
// their own, on a subject of this run.
func (r *Rig) roundTrip() (Timed, error) {
	responder, _, err := r.Connect(auth.Admin, "raw-responder")
	if err != nil {
		return nil, err
	}
	requester, _, err := r.Connect(auth.Admin, "raw-requester")
	if err != nil {
		return nil, err
	}
	return RoundTrip(responder, requester, "holdover.bench."+r.run+".rtt")
}

// forget removes what the measurement wrote for sid when the Rig closes,
// on a deployment only (an embedded server's files go as a whole): its
// log, its inbox and replies, its projection and its live-root record.
func (r *Rig) forget(sid string) {
	if r.own {
		return
	}
	r.later(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if subj, err := streams.SessionWildcard(sid); err == nil {
			_ = r.top.Sessions.Purge(ctx, jetstream.WithPurgeSubject(subj)) // its log, inbox and replies
		}
		_ = r.top.Questions.Purge(ctx, sid)
		_ = r.top.Roots.Purge(ctx, sid)
	})
}
