package waiter

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/waiter/waitertest"
)

// TestW8RacingOutcomesSettleOnce runs Clients that claim, answer, reject
// and release while the clock crosses the deadline, and checks that exactly
// one outcome wins and that everything is released afterwards. Run it with
// -race.
func TestW8RacingOutcomesSettleOnce(t *testing.T) {
	const (
		rounds  = 200
		clients = 8
		timeout = 40 * time.Millisecond
	)
	hostWins := 0
	for round := range rounds {
		clock, r := newTest(t)
		w := start(t, r, callA, timeout)

		var (
			mu       sync.Mutex
			wins     int
			expected func(t *testing.T, answers []holdover.Answer, err error)
			claims   []held
		)
		won := func(check func(t *testing.T, answers []holdover.Answer, err error)) {
			mu.Lock()
			defer mu.Unlock()
			wins++
			expected = check
		}

		begin := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() { // the clock crosses the deadline while Clients act
			<-begin
			for range 8 {
				clock.Advance(timeout / 4)
			}
		})
		for g := range clients {
			wg.Go(func() {
				<-begin
				c := held{w, fmt.Sprintf("client-%d", g)}
				_, ok := w.Claim(c.id)
				if ok {
					mu.Lock()
					claims = append(claims, c)
					mu.Unlock()
				}
				switch g % 4 {
				case 0:
					mine := []holdover.Answer{{ID: "q1", Custom: fmt.Sprint(g)}}
					if w.Answer(mine) {
						won(func(t *testing.T, answers []holdover.Answer, err error) {
							require.NoError(t, err)
							assert.Equal(t, mine, answers)
						})
					}
				case 1:
					mine := holdover.Newf(holdover.CodeAskTimedOut, "countdown of client %d", g)
					if w.Reject(mine) {
						won(func(t *testing.T, _ []holdover.Answer, err error) { assert.Same(t, mine, err) })
					}
				default:
					if ok {
						c.Release()
						c.Release()
					}
				}
			})
		}
		close(begin)
		wg.Wait()

		// Answerers and rejecters always act, so the wait has settled, though
		// a winning deadline timer may still be finishing in its own goroutine.
		settled(t, w)
		answers, err := w.Result(context.Background())
		switch wins {
		case 0:
			hostWins++
			assertCode(t, holdover.CodeAskTimedOut, err, "round ", round, ": only the deadline can win without a winning call")
			assert.Contains(t, err.Error(), "foreground wait")
		case 1:
			expected(t, answers, err)
		default:
			t.Fatalf("round %d: %d outcomes won", round, wins)
		}
		for _, c := range claims {
			select {
			case <-c.Closed():
			default:
				t.Fatalf("round %d: claim %s still open", round, c.ID())
			}
		}
		assert.Empty(t, claimIDs(w))
		assert.Equal(t, 0, r.Len())
		assert.Equal(t, 0, waitertest.Timers(clock))
	}
	t.Logf("the deadline won %d of %d rounds", hostWins, rounds)
}
