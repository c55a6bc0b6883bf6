package askuser_test

import (
	"testing"

	"github.com/holdover-dev/holdover/askuser"
)

// BenchmarkCall measures the tool's own work per call — strict parsing,
// validation and rendering — over a service that replies at once. The
// tool must stay negligible next to a question service round trip
// (tens of microseconds on loopback NATS, DESIGN.md).
func BenchmarkCall(b *testing.B) {
	for _, bc := range []struct {
		name string
		cfg  askuser.Config
		args string
		svc  *questionService
	}{
		{"legacy-answers", askuser.Config{}, oneQuestion(""), &questionService{}},
		{"timed-answers", timed, oneQuestion(`,"timeout":30`), &questionService{}},
		{"timed-pending", timed, oneQuestion(`,"timeout":30`), &questionService{outcome: pendingOutcome}},
		{"timed-rejected", timed, oneQuestion(`,"timeout":1.5`), &questionService{}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			tool, err := askuser.New(bc.cfg, bc.svc)
			if err != nil {
				b.Fatal(err)
			}
			c := call("call_1", bc.args)
			b.ReportAllocs()
			for b.Loop() {
				tool.Call(b.Context(), c)
				// Forget the recorded requests so memory stays flat.
				bc.svc.asks, bc.svc.timed = bc.svc.asks[:0], bc.svc.timed[:0]
			}
		})
	}
}
