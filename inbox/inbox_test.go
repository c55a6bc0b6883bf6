package inbox_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/inbox"
)

// DESIGN "Durable path": the reply is published with Nats-Msg-Id = message
// id, so publishing it again is not a second reply.
func TestPublishIsIdempotentByMessageID(t *testing.T) {
	r := newReplyRig(t)
	ctx := context.Background()
	m := reply(t, "m1", "c1")
	seq1, err := inbox.Publish(ctx, r.env.JS, "s1", m)
	require.NoError(t, err)
	seq2, err := inbox.Publish(ctx, r.env.JS, "s1", m)
	require.NoError(t, err)
	require.Equal(t, seq1, seq2)
	seq3, err := inbox.Publish(ctx, r.env.JS, "s1", reply(t, "m2", "c1"))
	require.NoError(t, err)
	require.Greater(t, seq3, seq1)

	cons, err := inbox.Open(ctx, r.env.Topology.Sessions, "s1", 0)
	require.NoError(t, err)
	batch, err := cons.Fetch(3, jetstream.FetchMaxWait(500*time.Millisecond))
	require.NoError(t, err)
	var got []inbox.Queued
	for msg := range batch.Messages() {
		q, err := inbox.DecodeMsg(msg)
		require.NoError(t, err)
		got = append(got, q)
	}
	require.Len(t, got, 2)
	require.Equal(t, m, got[0].Message)
	require.Equal(t, seq1, got[0].Seq)

	// A runtime resumes reading after the last message it spliced.
	cons, err = inbox.Open(ctx, r.env.Topology.Sessions, "s1", seq1)
	require.NoError(t, err)
	next, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
	require.NoError(t, err)
	q, err := inbox.DecodeMsg(next)
	require.NoError(t, err)
	require.Equal(t, "m2", q.Message.ID)
}

func TestPublishRejectsBadInput(t *testing.T) {
	r := newReplyRig(t)
	ctx := context.Background()
	_, err := inbox.Publish(ctx, r.env.JS, "a.b", reply(t, "m1", "c1"))
	require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err))
	_, err = inbox.Publish(ctx, r.env.JS, "s1", events.Message{ID: "m1", Role: "user", Source: events.Source{Kind: "invented"}})
	require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err))
	huge := events.Message{ID: "m1", Role: "user", Content: events.Text(strings.Repeat("x", events.MaxEventBytes)), Source: events.Source{Kind: events.SourceUser}}
	_, err = inbox.Publish(ctx, r.env.JS, "s1", huge)
	require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err))
	_, err = inbox.Open(ctx, r.env.Topology.Sessions, "*", 0)
	require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err))
	_, err = inbox.Publish(ctx, r.env.JS, ">", events.Message{ID: "m1", Role: "user", Source: events.Source{Kind: events.SourceUser}})
	require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err), "a Session id is never a wildcard")
	_, err = inbox.NewReplies(r.env.JS, r.env.Topology.Sessions, nil).Last(ctx, "s1", "")
	require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err))
}

func TestDecodeRejectsWhatIsNotAMessage(t *testing.T) {
	for _, data := range []string{"", "{", "[]", `{"id":"m1"}`, `{"id":"m1","role":"user","source":{"kind":"user-question-reply"}}`} {
		_, err := inbox.Decode([]byte(data))
		require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err), "%q", data)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"id":"m1","role":"user","content":[{"type":"text","text":"hi"}],"source":{"kind":"user"}}`))
	f.Add([]byte(`{"id":"m1","role":"user","content":[],"source":{"kind":"user-question-reply","callId":"c","outcome":"answered"}}`))
	f.Add([]byte(`{"id":"","source":{}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := inbox.Decode(data)
		if err != nil {
			require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err))
			return
		}
		require.NoError(t, m.Validate())
	})
}
