package worker

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 11: a runner that has served a request takes the next one
// handed to it instead of a new goroutine starting; every job runs once,
// however many arrive at once; and once the context ends every runner
// ends. Run with -race.
func TestRunnersServeEveryJobOnceAndEnd(t *testing.T) {
	r := newRunners()
	ctx, cancel := context.WithCancel(context.Background())

	first := make(chan struct{})
	r.run(ctx, func() { close(first) })
	<-first
	second := make(chan struct{})
	handed := false
	for deadline := time.Now().Add(10 * time.Second); !handed && time.Now().Before(deadline); {
		select {
		case r.next <- func() { close(second) }: // only an idle runner receives
			handed = true
		default:
			runtime.Gosched() // the runner is still on its way back to idle
		}
	}
	require.True(t, handed, "the runner of the first job waits for the next")
	<-second

	const jobs = 1000
	var ran atomic.Int64
	done := make(chan struct{}, jobs)
	for range jobs {
		r.run(ctx, func() { ran.Add(1); done <- struct{}{} })
	}
	for range jobs {
		<-done
	}
	assert.Equal(t, int64(jobs), ran.Load(), "each job ran once")

	cancel()
	r.wait() // returns: every runner ended with the context
}
