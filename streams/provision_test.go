package streams_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/streams"
)

func TestProvisionIsIdempotent(t *testing.T) {
	env := embeddedtest.Start(t, streams.Config{})
	ctx := context.Background()
	require.Equal(t, streams.SessionsStream, env.Topology.Sessions.CachedInfo().Config.Name)

	_, err := streams.Provision(ctx, env.JS, streams.Config{})
	require.NoError(t, err, "a second provision changes nothing")

	_, err = streams.Provision(ctx, env.JS, streams.Config{Memory: true})
	require.ErrorContains(t, err, "stream SESSIONS exists with storage")

	_, err = streams.Provision(ctx, env.JS, streams.Config{MaxConsumers: 5000})
	require.NoError(t, err, "a mutable field is updated in place")
	info, err := env.Topology.Sessions.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, 5000, info.Config.MaxConsumers)
}

// D8: an INBOX stream provisioned before late replies had subjects of
// their own takes the per-call reply subjects in place, keeping what it
// holds.
func TestProvisionAddsReplySubjectsToAnOldInbox(t *testing.T) {
	env := embeddedtest.Start(t, streams.Config{})
	ctx := context.Background()
	old := env.Topology.Inbox.CachedInfo().Config
	old.Subjects = []string{"holdover.session.*.inbox"}
	_, err := env.JS.UpdateStream(ctx, old)
	require.NoError(t, err)
	_, err = env.JS.Publish(ctx, "holdover.session.s1.inbox", []byte("{}"))
	require.NoError(t, err)

	top, err := streams.Provision(ctx, env.JS, streams.Config{})
	require.NoError(t, err)
	info, err := top.Inbox.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"holdover.session.*.inbox", "holdover.session.*.inbox.*"}, info.Config.Subjects)
	require.Equal(t, uint64(1), info.State.Msgs)
	_, err = env.JS.Publish(ctx, "holdover.session.s1.inbox.call_1", []byte("{}"))
	require.NoError(t, err)
}
