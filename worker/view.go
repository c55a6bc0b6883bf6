package worker

import (
	"context"

	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/userquestions"
)

// view is the view endpoint: the Session's userQuestions projection caught
// up to its last event, so a Client reconciling its cards right after an
// answer sees that answer's effects (C4, C5). A continued call whose
// reply is stored and not yet read by a runtime shows it queued.
func (d *durable) view(ctx context.Context, req *request) (any, error) {
	var in userquestions.ViewRequest
	if err := decode(req.data, &in); err != nil {
		return nil, err
	}
	if err := checkSession(in.Session); err != nil {
		return nil, err
	}
	v, err := d.views.CaughtUp(ctx, in.Session)
	if err != nil {
		return nil, err
	}
	for i := range v.Active {
		c := &v.Active[i]
		if c.Status != projection.Continued || c.Queued != nil {
			continue
		}
		stored, ok, err := d.replies.Stored(ctx, in.Session, c.CallID, c.Logged())
		if err != nil {
			return nil, err
		}
		if ok {
			c.ShowStored(stored)
		}
	}
	return v, nil
}
