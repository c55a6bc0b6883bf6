package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover/bench"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/inbox"
	"github.com/holdover-dev/holdover/steer/steertest"
	"github.com/holdover-dev/holdover/streams"
)

// BenchmarkReplyReservation measures the ways a late reply can be reserved
// and queued (D8), each against a raw publish of the same reply timed
// between its runs:
//
//   - expected-seq: the design in use, one publish on the call's reply
//     subject expecting the subject's last message (none, for a call's
//     first reply), which is the reservation and the reply at once;
//   - kv-create+publish: the design before, a KV Create of the
//     reservation key (exactly one create of a key wins) followed by the
//     publish of the reply;
//   - raw-fresh-subject: a plain publish to a subject of its own each
//     time, as each call's first reply is, to tell what a new subject
//     costs the server apart from the expectation.
//
// An atomic batch of the two writes (nats-server 2.12+) was measured for
// DESIGN.md at 4–5 ms p50 on file storage and is not run here.
func BenchmarkReplyReservation(b *testing.B) {
	onEachStorage(b, func(b *testing.B, storage streams.Config) {
		env := newAnswerWorldOn(b, storage, false).env
		ctx := context.Background()
		qs := steertest.Questions("q1", "q2")
		answers := steertest.Choose(qs)
		raw := rawPublisher(b, env.JS, qs, answers)
		replies := inbox.NewReplies(env.JS, env.Topology.Sessions, nil)
		reservations, err := env.JS.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket: "benchReservations", Storage: env.Topology.Sessions.CachedInfo().Config.Storage,
		})
		if err != nil {
			b.Fatal(err)
		}
		reply := func(i int) events.Message {
			m, err := events.NewReply(fmt.Sprintf("reply-%d", i), "call-1", qs, answers)
			if err != nil {
				b.Fatal(err)
			}
			return m
		}
		data, err := events.Encode(events.New(time.Now(), &events.UserMessage{Message: reply(0)}))
		if err != nil {
			b.Fatal(err)
		}
		next := 0
		for _, variant := range []struct {
			name  string
			write func(i int, m events.Message) error
		}{
			{"expected-seq", func(i int, m events.Message) error {
				_, err := replies.Queue(ctx, fmt.Sprintf("s%d", i), "call-1", m, 0)
				return err
			}},
			{"kv-create+publish", func(i int, m events.Message) error {
				if _, err := reservations.Create(ctx, fmt.Sprintf("s%d.call-1", i), []byte(`{"callId":"call-1","state":"queued"}`)); err != nil {
					return err
				}
				_, err := inbox.Publish(ctx, env.JS, fmt.Sprintf("k%d", i), m)
				return err
			}},
			{"raw-fresh-subject", func(i int, _ events.Message) error {
				m := &nats.Msg{Subject: fmt.Sprintf("holdover.session.f%d.inbox.call-1", i), Data: data}
				_, err := env.JS.PublishMsg(ctx, m, jetstream.WithMsgID(fmt.Sprintf("fresh-%d", i)))
				return err
			}},
		} {
			b.Run(variant.name, func(b *testing.B) {
				lat := make(bench.Samples, b.N)
				rawLat := make(bench.Samples, b.N)
				for i := range b.N {
					next++ // a fresh subject, key and message id for every write
					m := reply(next)
					took, err := raw(ctx)
					if err != nil {
						b.Fatal(err)
					}
					rawLat[i] = took
					start := time.Now()
					if err := variant.write(next, m); err != nil {
						b.Fatal(err)
					}
					lat[i] = time.Since(start)
				}
				reportRatio(b, lat, rawLat, "raw-publish")
			})
		}
	})
}
