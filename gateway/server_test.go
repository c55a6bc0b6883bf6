package gateway

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/ops/opstest"
	"github.com/holdover-dev/holdover/streams"
)

// serve runs a Server on a real embedded NATS server and returns its base
// URL and the function that shuts it down.
func serve(t *testing.T) (base string, srv *Server, shutdown func()) {
	return serveWith(t, func(*Config) {})
}

// serveWith is serve with a configuration edited by change (its token
// table, limits).
func serveWith(t *testing.T, change func(*Config)) (base string, srv *Server, shutdown func()) {
	t.Helper()
	env := embeddedtest.Start(t, streams.Config{Memory: true})
	tokens, err := NewTokens(map[string]Grant{"t": {User: "ana", Sessions: []string{"s1"}}})
	require.NoError(t, err)
	cfg := Config{
		NATS: env.Conn, JetStream: env.JS, Tokens: tokens,
		Files: fstest.MapFS{"index.html": {Data: []byte("<p>holdover</p>")}},
	}
	change(&cfg)
	srv, err = New(cfg)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	running := opstest.Start(t, ops.Component{Name: "gateway", Run: func(ctx context.Context, ready func()) error { return srv.Run(ctx, ln, ready) }})
	return "http://" + ln.Addr().String(), srv, func() { require.NoError(t, running.Stop()) }
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// The UI's port serves the UI and /healthz but not /metrics, which is an
// operator's and goes on an address of its own.
func TestServerServesTheUIAndHealthAndMetricsApart(t *testing.T) {
	base, srv, _ := serve(t)
	status, body := get(t, base+"/")
	assert.Equal(t, http.StatusOK, status)
	assert.Contains(t, body, "holdover")

	status, body = get(t, base+"/healthz")
	assert.Equal(t, http.StatusOK, status)
	assert.JSONEq(t, `{"ready":true,"checks":{"nats":"ok","jetstream":"ok"}}`, body)

	status, _ = get(t, base+"/metrics")
	assert.Equal(t, http.StatusNotFound, status, "the UI's port does not serve /metrics")

	metrics := httptest.NewServer(srv.MetricsHandler())
	defer metrics.Close()
	status, body = get(t, metrics.URL+"/metrics")
	assert.Equal(t, http.StatusOK, status)
	assert.Contains(t, body, "holdover_gateway_connections")
	assert.Contains(t, body, "holdover_gateway_request_fanout_seconds")
}

// Shutting the server down closes every WebSocket with "going away", so
// Clients reconnect, and Serve returns once they are all torn down.
func TestServerShutdownClosesConnections(t *testing.T) {
	base, srv, shutdown := serve(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, strings.Replace(base, "http", "ws", 1)+"/ws?token=t", nil)
	require.NoError(t, err)
	require.NoError(t, ws.Write(ctx, websocket.MessageText, []byte(`{"type":"hello","protocol":1,"client":"test"}`)))
	_, data, err := ws.Read(ctx)
	require.NoError(t, err)
	assert.Contains(t, string(data), `"welcome"`)

	shutdown()
	_, _, err = ws.Read(ctx)
	assert.Equal(t, websocket.StatusGoingAway, websocket.CloseStatus(err))

	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/ws", nil))
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code, "a closed server takes no new connections")
}
