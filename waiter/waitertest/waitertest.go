// Package waitertest is test support for code whose deadlines run on
// a fake clock (W2, W5): it counts the timers armed on it, so a test can
// say whether a deadline runs without advancing the clock to find out.
// It never arms, advances or stops a timer itself.
package waitertest

import (
	"context"

	"github.com/jonboulle/clockwork"
)

// Timers counts the fake clock's pending timers. BlockUntilContext with a
// cancelled context answers at once: nil when at least n are pending.
func Timers(clock *clockwork.FakeClock) int {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	n := 0
	for clock.BlockUntilContext(ctx, n+1) == nil {
		n++
	}
	return n
}
