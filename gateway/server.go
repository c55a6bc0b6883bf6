package gateway

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/nats-io/nuid"

	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/streams"
)

// Server is one gateway: the HTTP handler, its WebSocket connections and
// the per-Session feeds they share.
type Server struct {
	cfg      Config
	lim      Limits
	log      *slog.Logger
	metrics  *ops.Metrics
	m        *gatewayMetrics
	services map[string]*Service
	hubs     *hubs
	tokens   *tokenLimits
	unauth   *unauthenticated
	handler  http.Handler

	// ctx ends when the server shuts down; every connection ends with it.
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	conns  sync.WaitGroup
}

// New builds a Server from cfg. It opens nothing: connections arrive
// through Handler or Run.
func New(cfg Config) (*Server, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = ops.NewMetrics()
	}
	s := &Server{
		cfg:      cfg,
		lim:      cfg.Limits.withDefaults(),
		log:      cfg.Logger.With("component", "gateway"),
		metrics:  cfg.Metrics,
		m:        newGatewayMetrics(cfg.Metrics),
		services: make(map[string]*Service, len(cfg.Services)),
	}
	for i := range cfg.Services {
		s.services[cfg.Services[i].Name] = &cfg.Services[i]
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.hubs = newHubs(s)
	s.tokens = newTokenLimits(s.lim)
	s.unauth = newUnauthenticated(s.lim)

	mux := http.NewServeMux()
	mux.HandleFunc("GET /ws", s.serveWebSocket)
	// /metrics is not served here: the UI's port faces browsers, and the
	// metrics are an operator's (MetricsHandler, on an address of its own).
	mux.Handle("GET /healthz", s.MetricsHandler())
	if cfg.Files != nil {
		mux.Handle("GET /", http.FileServerFS(cfg.Files))
	}
	s.handler = secureHeaders(mux)
	return s, nil
}

// Handler serves the web UI at "/", the WebSocket at "/ws" and "/healthz".
func (s *Server) Handler() http.Handler { return s.handler }

// MetricsHandler serves "/metrics" (Config.Metrics) and "/healthz", for
// an address apart from the UI's that only operators reach.
func (s *Server) MetricsHandler() http.Handler {
	return ops.Handler(s.cfg.Metrics, ops.NATSConnected(s.cfg.NATS), ops.StreamAvailable(s.cfg.JetStream, streams.SessionsStream))
}

// Run serves HTTP on ln until ctx ends, the lifecycle of an
// ops.Component on the listener it is given: ready once it serves. Then
// it stops taking connections, closes every WebSocket connection (each
// releases its claims and delegates its requests) and returns once they
// are all gone. It closes ln.
func (s *Server) Run(ctx context.Context, ln net.Listener, ready func()) error {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 5 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return s.ctx },
	}
	s.log.Info("serving", "addr", ln.Addr().String())
	// Shutting the HTTP server down stops new connections; hijacked
	// WebSockets are the gateway's own to end, in close.
	defer s.close()
	return ops.Serve(ctx, srv, ln, ready)
}

// close ends every WebSocket connection and waits for their teardown. The
// handler refuses new ones afterwards.
func (s *Server) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.conns.Wait()
}

// admit registers a new connection unless the server is closing.
func (s *Server) admit() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns.Add(1)
	return true
}

func (s *Server) serveWebSocket(w http.ResponseWriter, r *http.Request) {
	if !s.admit() {
		http.Error(w, "the gateway is shutting down", http.StatusServiceUnavailable)
		return
	}
	defer s.conns.Done()
	ip := remoteIP(r)
	if no := s.unauth.admit(ip); no != nil {
		s.m.unauthRefused.WithLabelValues(no.scope).Inc()
		s.log.Debug("connection refused before hello", "remote", r.RemoteAddr, "scope", no.scope)
		w.Header().Set("Retry-After", "1")
		http.Error(w, no.msg, no.status)
		return
	}
	s.m.unauthenticated.Inc()
	var once sync.Once
	authenticated := func() {
		once.Do(func() {
			s.unauth.release(ip)
			s.m.unauthenticated.Dec()
		})
	}
	defer authenticated()
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{
		OriginPatterns:  s.cfg.OriginPatterns,
		CompressionMode: websocket.CompressionDisabled,
	})
	if err != nil {
		s.log.Debug("websocket handshake refused", "remote", r.RemoteAddr, "err", err)
		return
	}
	ws.SetReadLimit(s.lim.hardFrameLimit())
	c := newConn(s, ws, nuid.Next(), r.RemoteAddr, r.URL.Query().Get("token"))
	c.authenticated = authenticated
	c.run()
}

// service returns the service a method or stream name belongs to.
func (s *Server) service(name string) (*Service, bool) {
	svc, ok := s.services[name]
	return svc, ok
}
