package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/steer/steertest"
)

// M9, §8: the live-root check guards the human, and its errors cross NATS
// with their codes: a stale epoch is CALLER_NOT_LIVE, an owned child is
// DELEGATED_CALLER (told to use its final result), and a Session resumed
// as a new root may ask again.
func TestM9LiveRootOverNATS(t *testing.T) {
	w := newAnswerWorld(t)
	w.worker()
	c := w.agent()
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	roots := w.roots()
	ask := func(callID string, agent holdover.AgentRef) (holdover.Outcome, error) {
		return c.AskTimed(ctx, holdover.AskTimedRequest{
			Session: "s1", CallID: callID, Agent: &agent,
			Questions: steertest.Questions("q1"), TimeoutMs: 1,
		})
	}

	old, err := roots.Register(ctx, "s1", "runtime-a")
	require.NoError(t, err)
	_, err = roots.Register(ctx, "s1", "runtime-b")
	require.NoError(t, err)
	_, err = ask("c1", holdover.AgentRef{Instance: "runtime-a", Epoch: old})
	require.Equal(t, holdover.CodeCallerNotLive, holdover.CodeOf(err), "%v", err)

	child, err := roots.RegisterChild(ctx, "s1", "runtime-c", "planner")
	require.NoError(t, err)
	_, err = ask("c2", holdover.AgentRef{Instance: "runtime-c", Epoch: child})
	require.Equal(t, holdover.CodeDelegatedCaller, holdover.CodeOf(err), "%v", err)
	require.ErrorContains(t, err, "final result")

	// Resumed as a new root, the Session with lineage asks; no Client is
	// watching, so the bounded wait ends pending (W6).
	root, err := roots.Register(ctx, "s1", "runtime-d")
	require.NoError(t, err)
	out, err := ask("c3", holdover.AgentRef{Instance: "runtime-d", Epoch: root})
	require.NoError(t, err)
	require.True(t, out.Pending)
}
