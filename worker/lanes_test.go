package worker

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A lane runs its name's jobs in the order they came while another
// name's job is blocked; close cancels the blocked job, waits for it, and
// drops what comes afterwards. Run with -race.
func TestLanesKeepEachNamesOrderAndHoldNoNameBehindAnother(t *testing.T) {
	l := newLanes()
	blocked := make(chan struct{})
	l.do("slow", func(ctx context.Context) {
		close(blocked)
		<-ctx.Done()
	})
	<-blocked

	got := make(chan int, 100)
	for i := range 100 {
		l.do("fast", func(context.Context) { got <- i })
	}
	for i := range 100 {
		require.Equal(t, i, <-got, "in order, beside the blocked lane")
	}

	l.close()
	ran := false
	l.do("fast", func(context.Context) { ran = true })
	l.close()
	assert.False(t, ran, "dropped after close")
}
