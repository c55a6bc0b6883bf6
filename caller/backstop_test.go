package caller

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	leases "github.com/holdover-dev/holdover/lease"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/userquestions"
)

var q1 = []holdover.Question{{ID: "q1", Question: "Ship it?", Options: []holdover.Option{{Label: "yes"}, {Label: "no"}}}}

// stuckOwner is a worker as a caller sees one that froze right after it
// took a call: its lease exists and its subscriptions stand, it sends the
// accepted frame, and then it answers nothing but what status says.
type stuckOwner struct {
	lease    string
	statuses chan time.Time
	aborts   chan string
}

// newStuckOwner serves askTimed for the test; status answers with
// answer(), or not at all when it returns "".
func newStuckOwner(t *testing.T, url string, answer func() string) *stuckOwner {
	t.Helper()
	nc, js := embeddedtest.Connect(t, url)
	l, err := leases.Hold(context.Background(), nc, js, userquestions.RoleWorker, nuid.Next(), userquestions.MinReleaseBound)
	require.NoError(t, err)
	o := &stuckOwner{lease: l.Name(), statuses: make(chan time.Time, 100), aborts: make(chan string, 10)}
	_, err = nc.Subscribe(userquestions.Subject(userquestions.OpAskTimed), func(m *nats.Msg) {
		frame := nats.NewMsg(m.Reply)
		frame.Header.Set(userquestions.HeaderFrame, userquestions.FrameAccepted)
		frame.Data, _ = json.Marshal(userquestions.Accepted{Owner: o.lease, RequestID: "r1"})
		_ = nc.PublishMsg(frame)
	})
	require.NoError(t, err)
	_, err = nc.Subscribe(userquestions.WorkerSubject(o.lease, userquestions.VerbStatus), func(m *nats.Msg) {
		o.statuses <- time.Now()
		if a := answer(); a != "" {
			_ = m.Respond([]byte(a))
		}
	})
	require.NoError(t, err)
	_, err = nc.Subscribe(userquestions.WorkerSubject(o.lease, userquestions.VerbAbort), func(m *nats.Msg) {
		o.aborts <- string(m.Data)
		_ = m.Respond(nil)
	})
	require.NoError(t, err)
	require.NoError(t, nc.Flush())
	return o
}

func backstopClient(t *testing.T, url string) *Client {
	t.Helper()
	nc, _ := embeddedtest.Connect(t, url)
	c, err := New(context.Background(), nc, Config{ReleaseBound: userquestions.MinReleaseBound})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close()) })
	return c
}

var backstopAsk = holdover.AskTimedRequest{Session: "s1", CallID: "c1", Agent: &holdover.AgentRef{Instance: "i", Epoch: 1}, Questions: q1, TimeoutMs: 300}

// Issue 8 item 5 (W1, W5): a timed call whose owner stops answering past
// the deadline (frozen, its lease still held) ends pending at most one
// release bound after its deadline, and the owner is told to abort the
// wait for when it wakes.
func TestTimedCallOfAFrozenOwnerEndsPendingWithinTheBound(t *testing.T) {
	env := embeddedtest.Start(t, streams.Config{Memory: true})
	owner := newStuckOwner(t, env.Server.ClientURL(), func() string { return "" })
	c := backstopClient(t, env.Server.ClientURL())

	start := time.Now()
	out, err := c.AskTimed(context.Background(), backstopAsk)
	took := time.Since(start)
	require.NoError(t, err)
	assert.True(t, out.Pending)
	deadline := time.Duration(backstopAsk.TimeoutMs) * time.Millisecond
	t.Logf("pending %v after the deadline (release bound %v)", took-deadline, userquestions.MinReleaseBound)
	assert.GreaterOrEqual(t, took, deadline+userquestions.MinReleaseBound/2, "the owner was asked half a bound past the deadline")
	assert.Less(t, took, deadline+userquestions.MinReleaseBound+200*time.Millisecond)
	select {
	case id := <-owner.aborts:
		assert.Equal(t, "r1", id)
	case <-time.After(5 * time.Second):
		t.Fatal("the owner was not told to abort")
	}
}

// An owner that vouches for its wait (a Client's claim pauses the deadline,
// W2) keeps the call: it is asked again every half bound, and its reply,
// whenever it comes, is the outcome.
func TestTimedCallOfALiveOwnerWaitsForItsReply(t *testing.T) {
	env := embeddedtest.Start(t, streams.Config{Memory: true})
	owner := newStuckOwner(t, env.Server.ClientURL(), func() string { return "live" })
	c := backstopClient(t, env.Server.ClientURL())

	done := make(chan error, 1)
	var out holdover.Outcome
	go func() {
		var err error
		out, err = c.AskTimed(context.Background(), backstopAsk)
		done <- err
	}()
	for range 4 { // two release bounds past the deadline
		select {
		case <-owner.statuses:
		case err := <-done:
			t.Fatalf("the call ended while its owner vouched for it: %v %+v", err, out)
		case <-time.After(5 * time.Second):
			t.Fatal("the owner was not asked")
		}
	}
	// The owner settles: the caller takes its reply.
	nc, _ := embeddedtest.Connect(t, env.Server.ClientURL())
	c.mu.Lock()
	var reply string
	for token := range c.calls {
		reply = c.prefix + token
	}
	c.mu.Unlock()
	require.NotEmpty(t, reply)
	require.NoError(t, nc.Publish(reply, []byte(`{"answers":[{"id":"q1","selected":["yes"]}]}`)))
	require.NoError(t, <-done)
	assert.False(t, out.Pending)
	assert.Len(t, out.Answers, 1)
	assert.Empty(t, owner.aborts)
}
