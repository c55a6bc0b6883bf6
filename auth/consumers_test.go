package auth_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/events"
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
