package inbox_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/inbox"
)

// got collects what a Reader delivers to one Session.
type got struct {
	mu  sync.Mutex
	seq []uint64
	ids []string
}

func (g *got) deliver(q inbox.Queued) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.seq = append(g.seq, q.Seq)
	g.ids = append(g.ids, q.Message.ID)
}

func (g *got) has(n int) func() bool {
	return func() bool { g.mu.Lock(); defer g.mu.Unlock(); return len(g.ids) >= n }
}

func (g *got) snapshot() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.ids...)
}

func steered(id string) events.Message {
	return events.Message{ID: id, Role: "user", Content: events.Text(id), Source: events.Source{Kind: events.SourceUser}}
}

func newReader(t *testing.T, r *replyRig, size int) *inbox.Reader {
	t.Helper()
	rd, err := inbox.NewReader(r.env.Topology.Sessions, inbox.ReaderConfig{Name: "rt1", ShardSize: size})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rd.Close()) })
	return rd
}

// One consumer per ShardSize Sessions: five Sessions on shards of two are
// three consumers, and each Session gets its own messages, steered and
// replies alike, in order; markers and what does not decode are passed over.
func TestReaderFollowsManySessionsOnFewConsumers(t *testing.T) {
	r := newReplyRig(t)
	rd := newReader(t, r, 2)
	gots := map[string]*got{}
	for i := range 5 {
		sid := fmt.Sprintf("s%d", i)
		gots[sid] = &got{}
		stop, err := rd.Follow(r.ctx, sid, 0, gots[sid].deliver)
		require.NoError(t, err)
		t.Cleanup(stop)
	}
	var names []string
	for name := range r.env.Topology.Sessions.ConsumerNames(r.ctx).Name() {
		names = append(names, name)
	}
	require.ElementsMatch(t, []string{"inbox-rt1-0", "inbox-rt1-1", "inbox-rt1-2"}, names)
	for sid := range gots {
		_, err := inbox.Publish(r.ctx, r.env.JS, sid, steered(sid+"-a"))
		require.NoError(t, err)
		_, err = r.env.JS.Publish(r.ctx, "holdover.session."+sid+".inbox", []byte("{not json"))
		require.NoError(t, err)
		_, err = r.replies.Queue(r.ctx, sid, "c1", reply(t, sid+"-b", "c1"), 0)
		require.NoError(t, err)
		marker := nats.NewMsg("holdover.session." + sid + ".inbox.c2")
		marker.Header.Set(inbox.MarkerHeader, string(inbox.Released))
		_, err = r.env.JS.PublishMsg(r.ctx, marker)
		require.NoError(t, err)
		_, err = inbox.Publish(r.ctx, r.env.JS, sid, steered(sid+"-c"))
		require.NoError(t, err)
	}
	for sid, g := range gots {
		require.Eventually(t, g.has(3), 5*time.Second, 10*time.Millisecond, sid)
		require.Equal(t, []string{sid + "-a", sid + "-b", sid + "-c"}, g.snapshot())
	}
}

// A Session followed from a position gets what came after it, before and
// while it joins, once and in stream order, though messages are published
// all the while: the catch-up and the consumer meet without a gap or a
// repeat.
func TestReaderCatchesUpWhilePublishing(t *testing.T) {
	r := newReplyRig(t)
	rd := newReader(t, r, 4)
	// Another Session keeps the consumer alive, so s1 joins one that
	// already delivers.
	other := &got{}
	stop, err := rd.Follow(r.ctx, "s0", 0, other.deliver)
	require.NoError(t, err)
	defer stop()
	first, err := inbox.Publish(r.ctx, r.env.JS, "s1", steered("m0"))
	require.NoError(t, err)
	const n = 200
	published := make(chan error, 1)
	go func() {
		for i := 1; i <= n; i++ {
			if _, err := inbox.Publish(r.ctx, r.env.JS, "s1", steered(fmt.Sprintf("m%d", i))); err != nil {
				published <- err
				return
			}
		}
		published <- nil
	}()
	g := &got{}
	stop1, err := rd.Follow(r.ctx, "s1", first, g.deliver)
	require.NoError(t, err)
	defer stop1()
	require.NoError(t, <-published)
	_, err = inbox.Publish(r.ctx, r.env.JS, "s1", steered("end"))
	require.NoError(t, err)
	require.Eventually(t, g.has(n+1), 10*time.Second, 10*time.Millisecond)
	want := make([]string, n+1)
	for i := range n {
		want[i] = fmt.Sprintf("m%d", i+1)
	}
	want[n] = "end"
	require.Equal(t, want, g.snapshot())
	require.IsIncreasing(t, g.seq)
}

// A consumer that vanishes (an operator deleted it, or it outlived a long
// disconnect) is created again, and what was stored meanwhile is
// delivered once, in order.
func TestReaderRecoversAVanishedConsumer(t *testing.T) {
	r := newReplyRig(t)
	rd := newReader(t, r, 4)
	g := &got{}
	stop, err := rd.Follow(r.ctx, "s1", 0, g.deliver)
	require.NoError(t, err)
	defer stop()
	_, err = inbox.Publish(r.ctx, r.env.JS, "s1", steered("before"))
	require.NoError(t, err)
	require.Eventually(t, g.has(1), 5*time.Second, 10*time.Millisecond)
	require.NoError(t, r.env.Topology.Sessions.DeleteConsumer(r.ctx, "inbox-rt1-0"))
	for i := range 3 {
		_, err = inbox.Publish(r.ctx, r.env.JS, "s1", steered(fmt.Sprintf("after%d", i)))
		require.NoError(t, err)
	}
	require.Eventually(t, g.has(4), 10*time.Second, 20*time.Millisecond)
	require.Equal(t, []string{"before", "after0", "after1", "after2"}, g.snapshot())
	_, err = r.env.Topology.Sessions.Consumer(r.ctx, "inbox-rt1-0")
	require.NoError(t, err, "the consumer is back")
}

// Leaving stops the delivery; the last Session of a consumer leaving
// deletes it, so no consumer outlives what it follows; following twice is
// CONFLICT and a wildcard id BAD_REQUEST.
func TestReaderLeaveDeletesAnEmptyConsumer(t *testing.T) {
	r := newReplyRig(t)
	rd := newReader(t, r, 4)
	g := &got{}
	stop, err := rd.Follow(r.ctx, "s1", 0, g.deliver)
	require.NoError(t, err)
	_, err = rd.Follow(r.ctx, "s1", 0, g.deliver)
	require.Equal(t, holdover.CodeConflict, holdover.CodeOf(err))
	_, err = rd.Follow(r.ctx, "s.*", 0, g.deliver)
	require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err))
	stop()
	_, err = inbox.Publish(r.ctx, r.env.JS, "s1", steered("late"))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := r.env.Topology.Sessions.Consumer(r.ctx, "inbox-rt1-0")
		return err != nil
	}, 5*time.Second, 10*time.Millisecond)
	require.Empty(t, g.snapshot())
	// Following again reads the message left in the stream.
	stop, err = rd.Follow(r.ctx, "s1", 0, g.deliver)
	require.NoError(t, err)
	defer stop()
	require.Eventually(t, g.has(1), 5*time.Second, 10*time.Millisecond)
	require.Equal(t, []string{"late"}, g.snapshot())
}
