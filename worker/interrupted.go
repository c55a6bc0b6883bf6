package worker

import (
	"context"
	"fmt"
	"slices"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/liveroot"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/waiter"
)

// A runtime killed mid-wait leaves its call open: its wait ends when its
// caller lease does (W5: ASK_ABORTED), but only a runtime that resumes the
// Session repairs the call (a TOOL_OUTCOME_UNKNOWN result, D3), which
// turns it continued and so answerable (D6). The worker that held the
// wait does not leave that to someone restarting the agent: once no live
// root serves the Session (the runtime's root lease ends within the same
// release bound as its caller lease), it asks the resume pool to take the
// Session over.

// interrupted is told the calls whose waits ended because their caller's
// lease did, and sees to each of their Sessions on its own goroutine.
func (d *durable) interrupted(keys []waiter.Key) {
	bySession := map[string][]string{}
	for _, k := range keys {
		bySession[k.Session] = append(bySession[k.Session], k.CallID)
	}
	for sid, callIDs := range bySession {
		d.goBackground(func() { d.repairInterrupted(d.ctx, sid, callIDs) })
	}
}

// repairInterrupted asks the resume pool to take sid over while one of
// callIDs is still open and no live root serves the Session. A root whose
// lease still exists is followed for twice the release bound: the dead
// runtime's root lease ends within one bound of its caller lease, and a
// root that lives longer serves the Session itself.
func (d *durable) repairInterrupted(ctx context.Context, sid string, callIDs []string) {
	ctx, cancel := context.WithTimeout(ctx, 2*d.cfg.ReleaseBound+d.cfg.ResumeTimeout)
	defer cancel()
	log := d.log.With("session", sid, "calls", callIDs)
	for {
		view, err := d.views.CaughtUp(ctx, sid)
		if err != nil {
			log.Warn("read an interrupted call's Session; a late answer or a restart repairs it", ops.Err(err))
			return
		}
		if !slices.ContainsFunc(callIDs, func(id string) bool { return isOpen(view, id) }) {
			return // a result was recorded: nothing is interrupted
		}
		rec, state, err := d.roots.Root(ctx, sid, d.rootLeaseExists)
		if err != nil {
			log.Warn("look up live root for an interrupted call", ops.Err(err))
			return
		}
		if state != liveroot.Alive {
			d.resume(ctx, sid, state, rec, "an interrupted call")
			return
		}
		lost, unwatch := d.rootLeases.Watch(ctx, liveroot.LeaseName(rec.Instance))
		select {
		case <-lost:
			unwatch()
		case <-ctx.Done():
			unwatch()
			return // the root lives: it serves its Session
		}
	}
}

func isOpen(v projection.View, callID string) bool {
	c, ok := v.Find(callID)
	return ok && c.Status == projection.Open
}

// answerInterrupted decides again on an answer that steer refused with
// CALL_OPEN (refused): an open call whose Session no live root serves was
// interrupted, its runtime gone before it recorded a result. The answer
// asks the resume pool at once to take the Session over, and once a
// runtime did (it repairs the call before it answers, so the call is
// continued), answers again; when none did, it is refused NO_AGENT. A call
// whose root lives (or whose root's lease has yet to end) stays CALL_OPEN.
func (d *durable) answerInterrupted(ctx context.Context, in holdover.AnswerRequest, refused holdover.AnswerResult) (holdover.AnswerResult, error) {
	rec, state, err := d.roots.Root(ctx, in.Session, d.rootLeaseExists)
	if err != nil || state == liveroot.Alive {
		return refused, nil
	}
	if !d.resume(ctx, in.Session, state, rec, "an answer to an interrupted call") {
		return holdover.AnswerResult{Reason: &holdover.Error{Code: holdover.CodeNoAgent, Message: fmt.Sprintf(
			"call %s takes no answer: it is still open, no agent serves session %s (its runtime is gone), and no runtime of the resume pool took the Session over to repair the call; start one (holdover agent --pool) and the call turns continued",
			in.CallID, in.Session)}}, nil
	}
	return d.answerer.Answer(ctx, in)
}
