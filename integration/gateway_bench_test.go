package integration

import (
	"context"
	"fmt"
	"testing"

	"github.com/holdover-dev/holdover/bench"
)

// BenchmarkGatewayFanOut measures the gateway's share of a foreground
// request through package bench (bench.FanOut), as `holdover bench` does:
// from the request's publish on the Session's ask subject (the worker's
// last step) until every watching Client has read its request frame,
// beside core NATS reaching as many connections in the same run, every
// part on its role's credentials (authentication on). One op is a round
// and its raw twin: one request to all Clients of a Session; in the burst
// case a request in each of 100 Sessions at once (issue 12: p99 to the
// last Client under 20 ms), and one at a time the same 1,000 Clients asked
// in one Session after another. The watches cases are the burst to 1,000
// Clients that each watch 10 of the 100 Sessions, as a page showing
// several Sessions does: each connection gets 10 requests at once, 10,000
// in all, which protocol 2 batches into fewer messages than protocol 1's
// one a frame.
func BenchmarkGatewayFanOut(b *testing.B) {
	for _, clients := range []int{1, 10, 100, 1000} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			benchFanOut(b, bench.FanOutConfig{Sessions: 1, Clients: clients})
		})
	}
	b.Run("one-at-a-time/sessions=100/clients=10", func(b *testing.B) {
		benchFanOut(b, bench.FanOutConfig{Sessions: 100, Clients: 10, OneAtATime: true})
	})
	b.Run("burst/sessions=100/clients=10", func(b *testing.B) {
		benchFanOut(b, bench.FanOutConfig{Sessions: 100, Clients: 10})
	})
	for _, protocol := range []int{2, 1} {
		b.Run(fmt.Sprintf("burst/sessions=100/clients=100/watches=10/protocol=%d", protocol), func(b *testing.B) {
			benchFanOut(b, bench.FanOutConfig{Sessions: 100, Clients: 100, Watches: 10, Protocol: protocol})
		})
	}
}

func benchFanOut(b *testing.B, cfg bench.FanOutConfig) {
	rig, err := bench.Start(context.Background(), bench.Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(rig.Close)
	cfg.Rounds = b.N
	b.ResetTimer()
	rows, err := rig.FanOut(context.Background(), cfg)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	for _, r := range rows {
		b.ReportMetric(float64(r.Path.Quantile(0.5).Microseconds()), r.Key+"-p50-µs")
		b.ReportMetric(float64(r.Path.Quantile(0.99).Microseconds()), r.Key+"-p99-µs")
		b.ReportMetric(r.Ratio(0.5), r.Key+"/raw-p50")
		b.ReportMetric(r.Ratio(0.99), r.Key+"/raw-p99")
		b.ReportMetric(float64(r.Raw.Quantile(0.5).Microseconds()), r.Key+"-raw-p50-µs")
		b.ReportMetric(float64(r.Raw.Quantile(0.99).Microseconds()), r.Key+"-raw-p99-µs")
	}
}
