package integration

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/answerer"
	"github.com/holdover-dev/holdover/steer/steertest"
)

// D6, D8: 100 goroutines answering the same continued call at once,
// through two workers, queue exactly one reply; every other answer is
// REPLY_QUEUED.
func TestD8HundredConcurrentAnswersQueueOneReply(t *testing.T) {
	w := newAnswerWorld(t)
	w.worker()
	w.worker()
	clients := []*answerer.Client{w.client(), w.client(), w.client(), w.client()}
	qs := steertest.Questions("q1", "q2")
	steertest.NewSession(t, w.log, "race").Continued("call-1", qs)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const n = 100
	var (
		wg       sync.WaitGroup
		start    = make(chan struct{})
		mu       sync.Mutex
		accepted []string
		codes    = map[holdover.Code]int{}
	)
	for i := range n {
		c := clients[i%len(clients)]
		answers := steertest.Choose(qs)
		if i%2 == 0 {
			answers = steertest.Skip(qs)
		}
		wg.Go(func() {
			<-start
			res, err := c.Answer(ctx, holdover.AnswerRequest{Session: "race", CallID: "call-1", Answers: answers})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				codes[holdover.CodeOf(err)]++
			case res.Accepted:
				accepted = append(accepted, res.MessageID)
			default:
				codes["false"]++
			}
		})
	}
	close(start)
	wg.Wait()

	require.Len(t, accepted, 1, "codes: %v", codes)
	require.Equal(t, map[holdover.Code]int{holdover.CodeReplyQueued: n - 1}, codes)
	queued := w.inboxOf("race")
	require.Len(t, queued, 1)
	require.Equal(t, accepted[0], queued[0].Message.ID)
}
