package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/gateway"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/userquestions"
)

// BenchmarkGatewayFanOut measures the gateway's share of a foreground
// request: from the request's publish on the Session's ask subject (the
// worker's last step) until every watching Client has read its request
// frame. One op is one request to all Clients of a Session; in the burst
// case one op is a request in each of 100 Sessions at once, as
// TestGatewayScale's burst asks.
func BenchmarkGatewayFanOut(b *testing.B) {
	for _, clients := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) { benchFanOut(b, 1, clients) })
	}
	b.Run("burst/sessions=100/clients=10", func(b *testing.B) { benchFanOut(b, 100, 10) })
}

func benchFanOut(b *testing.B, sessions, clients int) {
	env := embeddedtest.Start(b, streams.Config{Memory: true})
	url := env.Server.ClientURL()
	gwConn, _ := embeddedtest.Connect(b, url)
	_, wsURL := serveGateway(b, url, gwConn, gateway.Limits{}, slog.New(slog.DiscardHandler))
	sid := func(i int) string { return fmt.Sprintf("bench-%d", i) }
	var arrived sync.WaitGroup
	for i := range sessions * clients {
		ctx, cancel := context.WithTimeout(context.Background(), fgPatience)
		ws, _, err := websocket.Dial(ctx, wsURL+"?token="+gwTokenBo, nil)
		cancel()
		require.NoError(b, err)
		b.Cleanup(func() { _ = ws.CloseNow() })
		live := make(chan struct{})
		for _, f := range []string{
			`{"type":"hello","protocol":1,"client":"bench"}`,
			fmt.Sprintf(`{"type":"watch","id":"w","session":%q,"fromSeq":1}`, sid(i%sessions)),
		} {
			require.NoError(b, ws.Write(context.Background(), websocket.MessageText, []byte(f)))
		}
		go func() {
			first := true
			for {
				_, data, err := ws.Read(context.Background())
				if err != nil {
					return
				}
				var f gwFrame
				_ = json.Unmarshal(data, &f)
				switch {
				case f.Type == "ready" && first:
					first = false
					close(live)
				case f.Type == "request":
					arrived.Done()
				}
			}
		}()
		select {
		case <-live:
		case <-time.After(fgPatience):
			b.Fatal("watch did not go live")
		}
	}

	nc, _ := embeddedtest.Connect(b, url)
	reply := nc.NewInbox()
	b.ResetTimer()
	for i := range b.N {
		arrived.Add(sessions * clients)
		for s := range sessions {
			subject, err := streams.AskSubject(sid(s))
			require.NoError(b, err)
			call := fmt.Sprintf("c%d", i)
			data, _ := json.Marshal(userquestions.WaterfallRequest{
				RequestID: fmt.Sprintf("r%d-%d", s, i), Session: sid(s), CallID: call,
				Questions: fgQuestions, Wait: &userquestions.WaitRef{CallID: call, Timed: true},
			})
			require.NoError(b, nc.PublishRequest(subject, reply, data))
		}
		arrived.Wait()
	}
}
