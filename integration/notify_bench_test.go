package integration

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/notify"
	"github.com/holdover-dev/holdover/notify/notifytest"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/sessionlog"
	"github.com/holdover-dev/holdover/streams"
)

// BenchmarkNotifyBacklog has one notifier settle b.N events of working
// agents over 100 Sessions already in the log (file storage), posting
// every transition to a loopback receiver: the notifier's own cost per
// event, from its start to the last acknowledgement.
func BenchmarkNotifyBacklog(b *testing.B) {
	env := embeddedtest.Start(b, streams.Config{})
	recv := notifytest.NewReceiver(b, notify.KeyHeader)
	hook, err := notify.ParseWebhook(recv.URL, notify.FormatJSON)
	require.NoError(b, err)
	metrics := ops.NewMetrics()
	cfg := notify.Config{Webhooks: []notify.Webhook{hook}, Metrics: metrics, Logger: slog.New(slog.DiscardHandler)}
	ctx := context.Background()
	cons, err := env.Topology.Sessions.CreateOrUpdateConsumer(ctx, cfg.ConsumerConfig()) // it starts at new events
	require.NoError(b, err)
	publishAll(b, sessionlog.New(env.JS, env.Topology.Sessions), benchEvents(100, b.N), 16)
	n, err := notify.New(env.JS, env.Topology.Sessions, env.Topology.Questions, cfg)
	require.NoError(b, err)

	b.ResetTimer()
	running, err := ops.Start(ctx, ops.Component{Name: "notify", Run: n.Run})
	require.NoError(b, err)
	for {
		info, err := cons.Info(ctx)
		require.NoError(b, err)
		if info.AckFloor.Stream >= uint64(b.N) && info.NumAckPending == 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	b.StopTimer()
	require.NoError(b, running.Stop())
	posted := notifytest.Count(b, metrics, "holdover_notify_delivered_total", "")
	require.Equal(b, float64(len(notifytest.Keys(recv.Requests()))), posted, "each transition posted once")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(posted/b.Elapsed().Seconds(), "notifications/s")
	b.ReportMetric(posted/float64(b.N), "notifications/event")
}
