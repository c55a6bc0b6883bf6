package auth_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/inbox"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/sessionlog"
	"github.com/holdover-dev/holdover/streams"
)

// floodLimit is the consumers SESSIONS holds in TestAnOperatorFloodTakesNoConsumer:
// small, so a flood that made even a few would leave an agent none.
const floodLimit = 2

// An operator that creates consumers until the limit (the attack filled
// an account with 993 durables, after which agents' new Sessions and
// holdover inspect failed) makes none: every create subject, ephemeral or
// durable, on every stream, is refused by the server. After it an agent
// still starts a Session (its first event and its inbox consumer, on a
// stream that holds floodLimit consumers) and the operator's inspect still
// reads the Session and its View.
func TestAnOperatorFloodTakesNoConsumer(t *testing.T) {
	env := embeddedtest.StartSecure(t, streams.Config{Memory: true, MaxConsumers: floodLimit})
	ctx := context.Background()
	op := newProber(t, env, env.Tenant, auth.Operator)
	streamsOf := []string{streams.SessionsStream, streams.ClaimsStream,
		streams.KVStreamPrefix + streams.QuestionsBucket, streams.KVStreamPrefix + streams.RootsBucket}
	consumers := func() int {
		n := 0
		for _, s := range streamsOf {
			info, err := env.JS.Stream(ctx, s)
			require.NoError(t, err)
			n += info.CachedInfo().State.Consumers
		}
		return n
	}
	before := consumers()

	refused := 0
	for i := range 5 * floodLimit {
		for _, s := range streamsOf {
			name := fmt.Sprintf("flood%d", i)
			cfg := map[string]any{"stream_name": s, "config": map[string]any{"durable_name": name, "ack_policy": "none"}}
			ephemeral := map[string]any{"stream_name": s, "config": map[string]any{"ack_policy": "none", "inactive_threshold": int64(1 << 62)}}
			for _, try := range []func(ctx context.Context, p *prober) error{
				api(jsAPI("CONSUMER.CREATE."+s), ephemeral),
				api(jsAPI("CONSUMER.CREATE."+s+"."+name), cfg),
				api(jsAPI("CONSUMER.CREATE."+s+"."+name+".holdover.session.s1.events"), cfg),
				api(jsAPI("CONSUMER.DURABLE.CREATE."+s+"."+name), cfg),
			} {
				denied, detail := op.try(try)
				require.True(t, denied, "the operator created a consumer on %s: %s", s, detail)
				require.Contains(t, detail, "Permissions Violation")
				refused++
			}
		}
	}
	require.Equal(t, before, consumers(), "after %d refused creates", refused)

	// An agent starts a new Session: its first event, then the consumer
	// its runtime reads the Session's inbox with.
	_, agentJS := env.As(t, auth.Agent)
	sessions, err := agentJS.Stream(ctx, streams.SessionsStream)
	require.NoError(t, err)
	seq, err := sessionlog.New(agentJS, sessions).Append(ctx, "s9", 0, events.New(time.Now(), &events.TurnStart{Turn: "t1"}))
	require.NoError(t, err)
	inboxes, err := streams.InboxSubjects("s9")
	require.NoError(t, err)
	_, err = sessions.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Name: "inbox-rt-0", FilterSubjects: inboxes, AckPolicy: jetstream.AckNonePolicy})
	require.NoError(t, err, "the agent's inbox consumer")

	// The operator inspects it: the log, and the View against its fold.
	_, opJS := env.As(t, auth.Operator)
	opSessions, err := opJS.Stream(ctx, streams.SessionsStream)
	require.NoError(t, err)
	views, err := opJS.KeyValue(ctx, streams.QuestionsBucket)
	require.NoError(t, err)
	log, err := sessionlog.NewDirect(opJS, opSessions).ReadStored(ctx, "s9", 0)
	require.NoError(t, err)
	require.Len(t, log, 1)
	require.Equal(t, seq, log[0].Seq)
	_, folded, _, err := projection.NewDirectStore(opJS, opSessions, views).Check(ctx, "s9")
	require.NoError(t, err)
	require.Equal(t, seq, folded.LastSeq)
	t.Logf("the operator's %d creates were refused; consumers before %d, after %d", refused, before, consumers())
}

// A consumer name is one token, and a NATS permission matches whole
// tokens, so no rule can give one runtime the delete of its own
// inbox-<instance>-<n> and not another's: an agent may delete any reader's
// consumer on SESSIONS (never the shared durables, a claim or a lease:
// TestDenialMatrix). What holds instead is that such a delete costs the
// reader nothing: runtime a's inbox consumer, deleted by runtime b, is
// made again, and a reads every steered message once, in order, those
// stored while the consumer was gone included.
func TestAnAgentDeletesAnotherRuntimesInboxConsumer(t *testing.T) {
	env := embeddedtest.StartSecure(t, streams.Config{Memory: true})
	ctx := context.Background()
	_, aJS := env.As(t, auth.Agent)
	aSessions, err := aJS.Stream(ctx, streams.SessionsStream)
	require.NoError(t, err)
	reader, err := inbox.NewReader(aSessions, inbox.ReaderConfig{Name: "rta", Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, reader.Close()) })
	got := make(chan string, 8)
	stop, err := reader.Follow(ctx, "s1", 0, func(q inbox.Queued) { got <- q.Message.ID })
	require.NoError(t, err)
	defer stop()
	steer := func(id string) {
		t.Helper()
		_, err := inbox.Publish(ctx, env.JS, "s1", events.Message{ID: id, Role: "user", Content: events.Text(id), Source: events.Source{Kind: events.SourceUser}})
		require.NoError(t, err)
	}
	next := func() string {
		t.Helper()
		select {
		case id := <-got:
			return id
		case <-time.After(patience):
			t.Fatal("runtime a read nothing")
			return ""
		}
	}
	steer("before")
	require.Equal(t, "before", next())

	_, bJS := env.As(t, auth.Agent)
	require.NoError(t, bJS.DeleteConsumer(ctx, streams.SessionsStream, "inbox-rta-0"), "runtime b deletes runtime a's inbox consumer")
	for i := range 3 {
		steer(fmt.Sprintf("after%d", i))
	}
	steer("end")
	// In stream order, so a message read twice would come before "end".
	require.Equal(t, []string{"after0", "after1", "after2", "end"}, []string{next(), next(), next(), next()})
	_, err = env.Topology.Sessions.Consumer(ctx, "inbox-rta-0")
	require.NoError(t, err, "runtime a made its consumer again")
}
