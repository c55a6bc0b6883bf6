package streams_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/embedded"
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

	// The durables an admin keeps are the stream's to tell every worker;
	// a provision without them no longer keeps them.
	_, err = streams.Provision(ctx, env.JS, streams.Config{Durables: []string{"replay", "audit", "replay"}})
	require.NoError(t, err)
	info, err = env.Topology.Sessions.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, map[string]bool{"projection": true, "replies": true, "notify": true, "replay": true, "audit": true}, streams.KeptDurables(info.Config))
	_, err = streams.Provision(ctx, env.JS, streams.Config{})
	require.NoError(t, err)
	info, err = env.Topology.Sessions.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, map[string]bool{"projection": true, "replies": true, "notify": true}, streams.KeptDurables(info.Config))
}

// oldTopology makes the SESSIONS and INBOX streams of a version that kept
// the inbox apart, with two steered messages, a reply and a marker on one
// call's reply subject, and a reply on another's (INBOX seqs 1-5), and a
// Session's log of n events.
func oldTopology(t *testing.T, env *embeddedtest.Env, n int) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, env.JS.DeleteStream(ctx, streams.SessionsStream))
	cfgs := streams.Config{}.StreamConfigs()
	sessions := cfgs[0]
	sessions.Subjects = []string{streams.AllEvents}
	_, err := env.JS.CreateStream(ctx, sessions)
	require.NoError(t, err)
	old := cfgs[0]
	old.Name, old.Subjects = streams.LegacyInboxStream, []string{streams.AllInboxes, streams.ReplySubjects}
	_, err = env.JS.CreateStream(ctx, old)
	require.NoError(t, err)
	for _, m := range []*nats.Msg{
		{Subject: "holdover.session.s1.inbox", Data: []byte(`steer-1`), Header: nats.Header{nats.MsgIdHdr: {"m1"}}},
		{Subject: "holdover.session.s1.inbox.call_1", Data: []byte(`reply-a`), Header: nats.Header{nats.MsgIdHdr: {"reply-a"}}},
		{Subject: "holdover.session.s1.inbox.call_1", Header: nats.Header{"Holdover-Reservation": {"released"}, "Holdover-Message-Id": {"reply-a"}, "Holdover-Session-Seq": {"7"}}},
		{Subject: "holdover.session.s1.inbox", Data: []byte(`steer-2`), Header: nats.Header{nats.MsgIdHdr: {"m2"}}},
		{Subject: "holdover.session.s1.inbox.call_2", Data: []byte(`reply-b`), Header: nats.Header{nats.MsgIdHdr: {"reply-b"}}},
	} {
		_, err := env.JS.PublishMsg(ctx, m)
		require.NoError(t, err)
	}
	for range n {
		_, err = env.JS.Publish(ctx, "holdover.session.s1.events", []byte(`{}`))
		require.NoError(t, err)
	}
}

// inboxAsMoved reads what a migrated SESSIONS holds on s1's inbox: every
// message in stream order, and the last of each reply subject.
func inboxAsMoved(t *testing.T, top *streams.Topology) {
	t.Helper()
	ctx := context.Background()
	_, err := top.Sessions.GetLastMsgForSubject(ctx, "holdover.session.s1.events")
	require.NoError(t, err, "the log stays")
	last, err := top.Sessions.GetLastMsgForSubject(ctx, "holdover.session.s1.inbox.call_1")
	require.NoError(t, err)
	require.Equal(t, "released", last.Header.Get("Holdover-Reservation"), "the marker is still the reservation of call_1 (D8)")
	require.Equal(t, "reply-a", last.Header.Get("Holdover-Message-Id"))
	require.Equal(t, "7", last.Header.Get("Holdover-Session-Seq"))
	last, err = top.Sessions.GetLastMsgForSubject(ctx, "holdover.session.s1.inbox.call_2")
	require.NoError(t, err)
	require.Equal(t, "reply-b", last.Header.Get(nats.MsgIdHdr), "call_2's reply still holds it (D8)")
	require.Equal(t, "reply-b", string(last.Data))

	subjects, err := streams.InboxSubjects("s1")
	require.NoError(t, err)
	cons, err := top.Sessions.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: subjects})
	require.NoError(t, err)
	batch, err := cons.FetchNoWait(10)
	require.NoError(t, err)
	var got []string
	var batch0 uint64
	for m := range batch.Messages() {
		got = append(got, m.Subject()+" "+string(m.Data()))
		if meta, err := m.Metadata(); err == nil && batch0 == 0 {
			batch0 = meta.Sequence.Stream
		}
	}
	require.Greater(t, batch0, uint64(5), "every copy lands above INBOX's last seq, where runtimes resume")
	require.Equal(t, []string{
		"holdover.session.s1.inbox steer-1",
		"holdover.session.s1.inbox.call_1 reply-a",
		"holdover.session.s1.inbox.call_1 ",
		"holdover.session.s1.inbox steer-2",
		"holdover.session.s1.inbox.call_2 reply-b",
	}, got, "the inbox reads as it did, in its order")

	_, err = top.Sessions.Info(ctx)
	require.NoError(t, err)
	info := top.Sessions.CachedInfo()
	require.Equal(t, streams.SessionSubjects, info.Config.Subjects)
	require.Empty(t, info.Config.Sources, "the source is dropped once every message is in")
}

// The inbox subjects moved into SESSIONS (one stream, so one fenced
// write can expect the whole Session): provisioning over a topology that
// kept them in INBOX copies its messages in stream order and deletes it.
func TestProvisionMovesAnOldInboxIntoSessions(t *testing.T) {
	env := embeddedtest.Start(t, streams.Config{})
	oldTopology(t, env, 1) // SESSIONS's last seq is below INBOX's
	ctx := context.Background()

	top, err := streams.Provision(ctx, env.JS, streams.Config{})
	require.NoError(t, err)
	inboxAsMoved(t, top)
	_, err = env.JS.Stream(ctx, streams.LegacyInboxStream)
	require.ErrorIs(t, err, jetstream.ErrStreamNotFound, "INBOX is gone")

	top, err = streams.Provision(ctx, env.JS, streams.Config{})
	require.NoError(t, err, "a second provision changes nothing")
	inboxAsMoved(t, top)
	_, err = env.JS.Publish(ctx, "holdover.session.s1.inbox.call_3", []byte("{}"))
	require.NoError(t, err, "SESSIONS takes new replies")
}

// A migration stopped at any step is finished by the next provision,
// copying nothing twice: here after INBOX was parked and sourced into
// SESSIONS, before SESSIONS took the inbox subjects, and again after it
// took them, before INBOX was deleted.
func TestProvisionFinishesAMigrationStoppedMidway(t *testing.T) {
	for _, stop := range []string{"sourced", "subjects taken"} {
		t.Run(stop, func(t *testing.T) {
			env := embeddedtest.Start(t, streams.Config{})
			oldTopology(t, env, 6)
			ctx := context.Background()
			old, err := env.JS.Stream(ctx, streams.LegacyInboxStream)
			require.NoError(t, err)
			parked := old.CachedInfo().Config
			parked.Subjects = []string{"holdover.legacy.inbox"}
			_, err = env.JS.UpdateStream(ctx, parked)
			require.NoError(t, err)
			sessions, err := env.JS.Stream(ctx, streams.SessionsStream)
			require.NoError(t, err)
			sourcing := sessions.CachedInfo().Config
			sourcing.Sources = []*jetstream.StreamSource{{Name: streams.LegacyInboxStream}}
			_, err = env.JS.UpdateStream(ctx, sourcing)
			require.NoError(t, err)
			require.Eventually(t, func() bool {
				info, err := sessions.Info(ctx)
				return err == nil && info.State.Msgs == 11
			}, 10*time.Second, 10*time.Millisecond)
			if stop == "subjects taken" {
				_, err = env.JS.UpdateStream(ctx, streams.Config{}.StreamConfigs()[0])
				require.NoError(t, err)
			}

			top, err := streams.Provision(ctx, env.JS, streams.Config{})
			require.NoError(t, err)
			inboxAsMoved(t, top)
			info, err := top.Sessions.Info(ctx)
			require.NoError(t, err)
			require.Equal(t, uint64(11), info.State.Msgs, "nothing copied twice")
			_, err = env.JS.Stream(ctx, streams.LegacyInboxStream)
			require.ErrorIs(t, err, jetstream.ErrStreamNotFound)
		})
	}
}

// More replicas than a server that runs alone can hold fail provisioning
// with what they need and what to do, for a new topology (which is then
// not created) and for one that exists with a single replica.
func TestProvisionRefusesReplicasASingleServerCannotHold(t *testing.T) {
	srv, err := embedded.Start(embedded.Options{StoreDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	_, js := embeddedtest.Connect(t, srv.ClientURL())
	ctx := context.Background()
	const why = "3 replicas need a NATS cluster of at least 3 JetStream servers, and this server runs alone: point --nats at a cluster, or provision a single server with --replicas 1"

	_, err = streams.Provision(ctx, js, streams.Config{Replicas: 3})
	require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err), "%v", err)
	require.ErrorContains(t, err, "create stream SESSIONS: "+why)
	_, err = js.Stream(ctx, streams.SessionsStream)
	require.ErrorIs(t, err, jetstream.ErrStreamNotFound)

	_, err = streams.Provision(ctx, js, streams.Config{Replicas: 1})
	require.NoError(t, err)
	_, err = streams.Provision(ctx, js, streams.Config{Replicas: 3})
	require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err), "%v", err)
	require.ErrorContains(t, err, "update stream SESSIONS: "+why)
}
