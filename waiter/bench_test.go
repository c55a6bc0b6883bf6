package waiter

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// BenchmarkLiveTimedWaitMemory measures the heap held by one live timed
// wait with one claim, the shape of a question a Client is looking at,
// with 10,000 of them live at once on the real clock. Target: under 8 KiB
// per wait. The callers' request contexts exist before the measurement:
// they belong to the transport, not to the wait.
func BenchmarkLiveTimedWaitMemory(b *testing.B) {
	const live = 10_000
	keys := make([]Key, live)
	parents := make([]context.Context, live)
	claimIDs := make([]string, live)
	for i := range live {
		keys[i] = Key{Session: fmt.Sprintf("session-%05d", i), CallID: fmt.Sprintf("toolu_%020d", i)}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		parents[i] = ctx
		claimIDs[i] = fmt.Sprintf("claim_gateway-1_%05d", i)
	}

	var perWait float64
	for b.Loop() {
		r := NewRegistry(clockwork.NewRealClock())
		waits := make([]*Wait, live)
		before := heapInUse()
		for i := range live {
			w, err := r.Start(parents[i], Request{Key: keys[i], Timeout: 2 * time.Minute})
			if err != nil {
				b.Fatal(err)
			}
			if _, ok := w.Claim(claimIDs[i]); !ok {
				b.Fatal("claim refused")
			}
			waits[i] = w
		}
		after := heapInUse()
		perWait = float64(after-before) / live
		runtime.KeepAlive(r)
		for _, w := range waits {
			w.Answer(nil)
		}
	}
	b.ReportMetric(perWait, "bytes/wait")
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
