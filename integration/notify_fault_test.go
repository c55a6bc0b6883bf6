package integration

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/notify"
	"github.com/holdover-dev/holdover/notify/notifytest"
	"github.com/holdover-dev/holdover/sessionlog"
	"github.com/holdover-dev/holdover/steer/steertest"
	"github.com/holdover-dev/holdover/streams"
)

// A `holdover notify` process is SIGKILLed while the receiver holds one
// of its requests open and Sessions keep asking questions; a new process
// started on the same consumer posts everything the first did not
// settle. Nothing is lost, the held notification is posted again, and
// every repeat carries its original's key and body.
func TestNotifyKilledMidDeliveryLosesNothing(t *testing.T) {
	t.Parallel()
	const sessions, calls = 40, 3
	holdoverBin, _ := shippedBinaries(t)
	env := embeddedtest.Start(t, streams.Config{}) // file storage, as deployed
	recv := notifytest.NewReceiver(t, notify.KeyHeader)
	spawn := func() *fgProc {
		return fgSpawn(t, "holdover notify", exec.Command(holdoverBin, "notify", "--nats", env.Server.ClientURL(),
			"--webhook", recv.URL, "--web-url", "http://127.0.0.1:8080/", "--ack-wait", "2s", "--metrics-addr", "127.0.0.1:0"))
	}
	first := spawn()
	ctx := context.Background()
	require.Eventually(t, func() bool {
		_, err := env.JS.Consumer(ctx, streams.SessionsStream, notify.DefaultDurable)
		return err == nil
	}, restartPatience, 10*time.Millisecond, "the notifier never created its consumer:\n%s", first.log())

	// The Sessions ask their questions round-robin, as fast as the log
	// takes them, before, during and after the kill.
	log := sessionlog.New(env.JS, env.Topology.Sessions)
	const notifications = sessions * calls * 2
	want := map[string]bool{} // the writer's until it is done
	var writing sync.WaitGroup
	var appended int
	writing.Go(func() {
		all := make([]*steertest.Session, sessions)
		for i := range all {
			all[i] = steertest.NewSession(t, log, fmt.Sprintf("s%02d", i))
			all[i].Header(true)
			appended++
		}
		for c := range calls {
			for _, s := range all {
				id := fmt.Sprintf("call_%d", c)
				asked := s.Ask(id, dbQuestions)
				s.Append(&events.AssistantMessage{ID: id + "-meanwhile", Content: events.Text("Working on what does not depend on it.")})
				s.Pending(id)
				appended += 3
				for _, kind := range notify.Kinds {
					key, err := notify.Key(s.ID, id, asked, kind)
					if err != nil {
						panic(err)
					}
					want[key] = true
				}
			}
		}
	})

	recv.Await(t, restartPatience, "a third of the notifications", func(reqs []notifytest.Request) bool {
		return len(notifytest.Keys(reqs)) >= notifications/3
	})
	held, release := recv.HoldNext()
	select {
	case <-held:
	case <-time.After(restartPatience):
		t.Fatal("no request arrived to hold")
	}
	reqs := recv.Requests()
	heldKey := reqs[len(reqs)-1].Key
	first.kill()
	killed := time.Now()
	release()
	second := spawn()
	writing.Wait()
	require.Len(t, want, notifications)

	recv.Await(t, restartPatience, "every notification accepted", func(reqs []notifytest.Request) bool {
		keys := notifytest.Keys(reqs)
		for k := range want {
			if keys[k] == 0 {
				return false
			}
		}
		return true
	})
	all := time.Since(killed)

	reqs = recv.Requests()
	bodies := map[string][]byte{}
	var repeats, afterKill int
	var firstAfter, heldAgain time.Duration
	for _, r := range reqs {
		require.True(t, want[r.Key], "%s is a transition of the log", r.Key)
		if b, seen := bodies[r.Key]; seen {
			repeats++
			require.True(t, bytes.Equal(b, r.Body), "a repeat of %s is the same notification:\n%s\n%s", r.Key, b, r.Body)
		}
		bodies[r.Key] = r.Body
		if r.At.After(killed) {
			afterKill++
			if firstAfter == 0 {
				firstAfter = r.At.Sub(killed)
			}
			if r.Key == heldKey && r.Status == 200 && heldAgain == 0 {
				heldAgain = r.At.Sub(killed)
			}
		}
	}
	require.NotZero(t, heldAgain, "the notification held when the process died (%s) is posted again", heldKey)
	require.Len(t, notifytest.Keys(reqs), len(want), "none lost")
	t.Logf("%d events in %d Sessions, %d notifications; %d requests, %d repeats (same key and body); "+
		"after the SIGKILL: first request %v, the held notification again %v, every notification accepted %v (ack wait 2 s)",
		appended, sessions, len(want), len(reqs), repeats, firstAfter.Round(time.Millisecond), heldAgain.Round(time.Millisecond), all.Round(time.Millisecond))

	// The consumer settles: every event acknowledged by the second process.
	require.Eventually(t, func() bool {
		info, err := env.Topology.Sessions.Info(ctx)
		require.NoError(t, err)
		cons, err := env.JS.Consumer(ctx, streams.SessionsStream, notify.DefaultDurable)
		require.NoError(t, err)
		ci, err := cons.Info(ctx)
		require.NoError(t, err)
		return ci.AckFloor.Stream == info.State.LastSeq && ci.NumAckPending == 0
	}, restartPatience, 10*time.Millisecond, "the second notifier acknowledges every event")
	second.kill()
	assert.NotContains(t, second.log(), "DATA RACE")
	assert.NotContains(t, first.log(), "DATA RACE")
}
