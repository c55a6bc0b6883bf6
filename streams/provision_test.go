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
