package gateway

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/holdover-dev/holdover/answerer"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/streams"
)

// Issue 25: nothing of a gateway outlives its Run. A Client watched a
// Session (its feed and its userQuestions requests) and made a call; once
// the gateway stops, and the answerer it used is closed, no goroutine of
// theirs runs, the Client's connection included.
func TestNothingOfAGatewayOutlivesItsRun(t *testing.T) {
	env := embeddedtest.Start(t, streams.Config{Memory: true})
	leaks := embeddedtest.Leaks(t, env.Conn)
	quiet := slog.New(slog.DiscardHandler)
	ans, err := answerer.New(env.Conn, answerer.Config{Log: quiet})
	require.NoError(t, err)
	tokens, err := NewTokens(map[string]Grant{"t": {User: "ana", Sessions: []string{"s1"}}})
	require.NoError(t, err)
	srv, err := New(Config{NATS: env.Conn, JetStream: env.JS, Tokens: tokens, Logger: quiet,
		Services: []Service{UserQuestions(ans), Sessions()}})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	running, err := ops.Start(context.Background(), ops.Component{Name: "gateway", Run: func(ctx context.Context, ready func()) error {
		return srv.Run(ctx, ln, ready)
	}})
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws://"+ln.Addr().String()+"/ws", nil)
	require.NoError(t, err)
	for _, frame := range []string{
		`{"type":"hello","protocol":1,"client":"test","token":"t"}`,
		`{"type":"watch","id":"w1","session":"s1"}`,
		`{"type":"call","id":"c1","method":"userQuestions.view","params":{"session":"s1"}}`,
	} {
		require.NoError(t, ws.Write(ctx, websocket.MessageText, []byte(frame)))
	}
	// The Client reads until its connection ends, as a browser does: it
	// answers the gateway's close.
	frames := make(chan string, 16)
	go func() {
		defer close(frames)
		for {
			_, data, err := ws.Read(context.Background())
			if err != nil {
				return
			}
			frames <- string(data)
		}
	}()
	for answered := false; !answered; { // the call's answer comes after the watch's frames
		select {
		case f := <-frames:
			answered = strings.Contains(f, `"c1"`)
		case <-ctx.Done():
			t.Fatal("the call was not answered")
		}
	}

	require.NoError(t, running.Stop())
	for range frames { // closed by the gateway
	}
	ans.Close()
	goleak.VerifyNone(t, leaks...)
}
