package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/steer/steertest"
)

// DESIGN "Durable path", D5–D8, C4: a late answer goes Client → worker →
// Session inbox; the agent splices, claims and admits it; the projection
// settles the call with the late batch, and the call takes no second
// answer. A discarded reply leaves the question answerable again.
func TestDurablePathEndToEnd(t *testing.T) {
	w := newAnswerWorld(t)
	w.worker()
	c := w.client()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	qs := steertest.Questions("color", "size")
	s := steertest.NewSession(t, w.log, "flow")
	s.Continued("kept", qs)
	s.Continued("dropped", qs)

	// The user answers "kept" late, then "dropped".
	answers := []holdover.Answer{{ID: "color", Selected: []string{"yes"}}, {ID: "size", Selected: []string{}, Custom: "XL"}}
	kept, err := c.Answer(ctx, holdover.AnswerRequest{Session: "flow", CallID: "kept", Answers: answers})
	require.NoError(t, err)
	require.True(t, kept.Accepted)
	dropped, err := c.Answer(ctx, holdover.AnswerRequest{Session: "flow", CallID: "dropped", Answers: steertest.Skip(qs)})
	require.NoError(t, err)
	require.True(t, dropped.Accepted)

	// The agent reads its inbox at its next step, as the runtime does.
	queued := w.inboxOf("flow")
	require.Len(t, queued, 2)
	for _, q := range queued {
		s.Splice(q.Message, q.Seq)
	}
	v, err := c.View(ctx, "flow")
	require.NoError(t, err)
	for _, id := range []string{"kept", "dropped"} {
		call, ok := v.Find(id)
		require.True(t, ok)
		require.Equal(t, projection.Continued, call.Status, "a splice alone never settles (D5)")
		require.NotNil(t, call.Queued, "P5: the tool row can show the submitted answers")
	}
	_, err = c.Answer(ctx, holdover.AnswerRequest{Session: "flow", CallID: "kept", Answers: steertest.Skip(qs)})
	require.Equal(t, holdover.CodeReplyQueued, holdover.CodeOf(err))

	s.Claim(kept.MessageID)
	s.Admit(queued[0].Message)
	s.Discard(dropped.MessageID)
	s.Append(&events.StepEnd{Turn: s.Turn, Step: 1})

	v, err = c.View(ctx, "flow")
	require.NoError(t, err)
	settled, ok := v.FindSettled("kept")
	require.True(t, ok)
	require.True(t, settled.Late)
	require.Equal(t, answers, settled.Answers)
	res, err := c.Answer(ctx, holdover.AnswerRequest{Session: "flow", CallID: "kept", Answers: steertest.Skip(qs)})
	require.NoError(t, err)
	require.False(t, res.Accepted, "settled: no longer continued")

	// C4: the discarded steer leaves the question answerable again.
	call, ok := v.Find("dropped")
	require.True(t, ok)
	require.Equal(t, projection.Continued, call.Status)
	require.Nil(t, call.Queued)
	again, err := c.Answer(ctx, holdover.AnswerRequest{Session: "flow", CallID: "dropped", Answers: steertest.Choose(qs)})
	require.NoError(t, err)
	require.True(t, again.Accepted)
	require.NotEqual(t, dropped.MessageID, again.MessageID)
}
