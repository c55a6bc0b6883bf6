package worker

import (
	"context"

	"github.com/holdover-dev/holdover/userquestions"
)

// view is the view endpoint: the Session's userQuestions projection caught
// up to its last event, so a Client reconciling its cards right after an
// answer sees that answer's effects (C4, C5).
func (d *durable) view(ctx context.Context, req *request) (any, error) {
	var in userquestions.ViewRequest
	if err := decode(req.data, &in); err != nil {
		return nil, err
	}
	if err := checkSession(in.Session); err != nil {
		return nil, err
	}
	return d.views.CaughtUp(ctx, in.Session)
}
