package auth_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/streams"
)

// Two tenants on one server are two NATS accounts: each has its own
// streams and buckets under the same names, and nothing one tenant stores
// or sends reaches the other, not even its admin. Tenant b has a Session
// with an event, a View, an inbox message and a question on the wire;
// tenant a sees none of them.
func TestTenantsAreIsolated(t *testing.T) {
	env := embeddedtest.StartSecure(t, streams.Config{Memory: true}, "a", "b")
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	const secret = "secret"
	_, bAdmin := env.AsTenant(t, "b", auth.Admin)
	bTop, err := streams.Provision(ctx, bAdmin, streams.Config{Memory: true})
	require.NoError(t, err)

	_, bAgent := env.AsTenant(t, "b", auth.Agent)
	events, _ := streams.EventsSubject(secret)
	_, err = bAgent.Publish(ctx, events, []byte(`{"type":"turn/start","at":"2026-12-02T15:19:29Z","data":{"turn":"t1"}}`))
	require.NoError(t, err)
	_, bWorker := env.AsTenant(t, "b", auth.Worker)
	inboxSubject, _ := streams.ReplySubject(secret, "call-1")
	_, err = bWorker.Publish(ctx, inboxSubject, []byte(`{"id":"m1"}`))
	require.NoError(t, err)
	_, err = bTop.Questions.Put(ctx, secret, []byte(`{"active":[],"settled":[],"lastSeq":1}`))
	require.NoError(t, err)

	// Tenant a, even its admin, finds none of it in its own account.
	aAdmin := env.JS
	aSessions, err := aAdmin.Stream(ctx, streams.SessionsStream)
	require.NoError(t, err)
	_, err = aSessions.GetLastMsgForSubject(ctx, events)
	require.ErrorIs(t, err, jetstream.ErrMsgNotFound, "a's log has no event of b's Session")
	_, err = aSessions.GetLastMsgForSubject(ctx, inboxSubject)
	require.ErrorIs(t, err, jetstream.ErrMsgNotFound, "a's inboxes hold nothing of b's")
	_, err = env.Topology.Questions.Get(ctx, secret)
	require.ErrorIs(t, err, jetstream.ErrKeyNotFound, "a's projection has no View of b's Session")
	bInfo, err := bTop.Sessions.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, uint64(2), bInfo.State.Msgs, "b's own SESSIONS holds its event and its reply")

	// A question b's worker sends to b's answerers does not reach a
	// gateway of a watching the same Session id: a sees only its own
	// message published after b's.
	aGateway, _ := env.AsTenant(t, "a", auth.Gateway)
	asks, err := aGateway.SubscribeSync(streams.AllAsks)
	require.NoError(t, err)
	require.NoError(t, aGateway.Flush())
	bWorkerConn, _ := env.AsTenant(t, "b", auth.Worker)
	askSubject, _ := streams.AskSubject(secret)
	require.NoError(t, bWorkerConn.Publish(askSubject, []byte(`{"requestId":"from-b"}`)))
	require.NoError(t, bWorkerConn.Flush())
	aWorkerConn, _ := env.AsTenant(t, "a", auth.Worker)
	require.NoError(t, aWorkerConn.Publish(askSubject, []byte(`{"requestId":"from-a"}`)))
	msg, err := asks.NextMsg(patience)
	require.NoError(t, err)
	require.JSONEq(t, `{"requestId":"from-a"}`, string(msg.Data), "b's request never reached a")

	// Nor does a reply: a's agent inbox prefix is a's alone.
	spy, _ := env.AsTenant(t, "a", auth.Admin)
	replies, err := spy.SubscribeSync(auth.Agent.InboxPrefix() + ".>")
	require.NoError(t, err)
	require.NoError(t, spy.Flush())
	bAgentConn, _ := env.AsTenant(t, "b", auth.Agent)
	_, err = bAgentConn.Request(streams.ServicePrefix+"."+streams.EndpointView, []byte(`{"session":"secret"}`), time.Second)
	require.ErrorIs(t, err, nats.ErrNoResponders, "b has no worker running")
	require.NoError(t, spy.Publish(auth.Agent.InboxPrefix()+".mark", nil))
	msg, err = replies.NextMsg(patience)
	require.NoError(t, err)
	require.Equal(t, auth.Agent.InboxPrefix()+".mark", msg.Subject, "b's request and its reply stayed in b")
}
