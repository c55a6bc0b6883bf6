package gateway

import (
	"io/fs"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/ops"
)

// Config is everything a Server needs. NATS, JetStream and Tokens are
// required; the rest has defaults.
type Config struct {
	// NATS is the gateway's connection. Give it a reconnect wait well below
	// the claim release bound (DefaultReconnectWait), or a short network
	// blip costs every Client its claims.
	NATS *nats.Conn
	// JetStream is the JetStream context of NATS.
	JetStream jetstream.JetStream
	// Tokens lists who may connect and which Sessions each may use.
	Tokens *Tokens
	// Services are the backends Clients reach, by name (see the package doc).
	Services []Service
	// Files is the web UI served at "/"; nil serves no UI.
	Files fs.FS
	// Limits bound what one connection may do.
	Limits Limits
	// OriginPatterns are the extra browser origins allowed to open the
	// WebSocket; the gateway's own host is always allowed.
	OriginPatterns []string
	// Metrics receives the gateway's collectors and is what
	// MetricsHandler serves; nil makes a fresh set. The collectors register once, so give
	// each Server its own, or share one set with the process's other
	// components (holdover dev).
	Metrics *ops.Metrics
	// Logger is the structured logger; nil is slog.Default().
	Logger *slog.Logger
}

// DefaultReconnectWait is the NATS reconnect wait the gateway is built for:
// a quarter of the one second a claim survives at the shortest, so a
// reconnect lands long before NATS gives a claim up.
const DefaultReconnectWait = 250 * time.Millisecond

// Limits bound one WebSocket connection. A frame beyond a limit gets an
// error frame with a stable code and is dropped; the connection survives.
type Limits struct {
	// MaxFrameBytes bounds one frame from a Client. 0 means 256 KiB.
	MaxFrameBytes int64
	// FramesPerSecond and Burst bound the rate of frames from a Client
	// (a token bucket). 0 means 50 per second with a burst of 100.
	FramesPerSecond float64
	Burst           int
	// MaxWatches bounds the watches one connection holds. 0 means 32.
	MaxWatches int
	// MaxStreams bounds the Remote streams open on one connection. 0 means 64.
	MaxStreams int
	// MaxCalls bounds the RPC calls in progress on one connection. 0 means 16.
	MaxCalls int
	// SendQueue and SendQueueBytes bound what may wait to be written to
	// one Client, in frames and in bytes. A live frame that finds either
	// reached closes the connection as too slow (1008); the Client
	// reconnects and watches again from the last seq it has. A watch's
	// history waits for room instead, a page at a time, in half of each
	// bound (the other half is the live frames'), so the memory a Client
	// that stops reading costs is these bounds, not its Sessions' logs.
	// 0 means 256 frames and 512 KiB.
	SendQueue      int
	SendQueueBytes int
	// HelloTimeout is how long a new connection has to say hello. 0 means 10 s.
	HelloTimeout time.Duration
	// WriteTimeout bounds writing one message: a Client that takes
	// nothing for that long has stopped reading and is closed as too slow
	// (1008). 0 means 10 s.
	WriteTimeout time.Duration
	// CallTimeout bounds one RPC call. 0 means 10 s.
	CallTimeout time.Duration
	// MaxConnsPerToken bounds the connections one token holds at once.
	// 0 means 16.
	MaxConnsPerToken int
	// TokenFramesPerSecond and TokenBurst bound the frames all of one
	// token's connections send together. 0 means 100 per second with a
	// burst of 200.
	TokenFramesPerSecond float64
	TokenBurst           int
	// MaxUnauthenticated and MaxUnauthenticatedPerIP bound the connections
	// that have not said hello yet, in all and from one remote address
	// (behind a reverse proxy every Client has the proxy's). One more is
	// refused at the upgrade: 503 over the first, 429 over the second.
	// 0 means 1024 and 128.
	MaxUnauthenticated      int
	MaxUnauthenticatedPerIP int
}

// DefaultLimits are the limits a zero Limits stands for.
func DefaultLimits() Limits { return Limits{}.withDefaults() }

// withDefaults fills in the zero fields.
func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	if l.MaxFrameBytes <= 0 {
		l.MaxFrameBytes = 256 << 10
	}
	if l.FramesPerSecond <= 0 {
		l.FramesPerSecond = 50
	}
	def(&l.Burst, 100)
	def(&l.MaxWatches, 32)
	def(&l.MaxStreams, 64)
	def(&l.MaxCalls, 16)
	def(&l.SendQueue, 256)
	def(&l.SendQueueBytes, 512<<10)
	def(&l.MaxConnsPerToken, 16)
	if l.TokenFramesPerSecond <= 0 {
		l.TokenFramesPerSecond = 100
	}
	def(&l.TokenBurst, 200)
	def(&l.MaxUnauthenticated, 1024)
	def(&l.MaxUnauthenticatedPerIP, 128)
	defDur(&l.HelloTimeout, 10*time.Second)
	defDur(&l.WriteTimeout, 10*time.Second)
	defDur(&l.CallTimeout, 10*time.Second)
	return l
}

// hardFrameLimit is where the WebSocket library itself stops reading and
// closes the connection. Frames between MaxFrameBytes and this are read
// to the end, dropped and answered with an error frame; only a frame far
// beyond any honest use costs the connection.
func (l Limits) hardFrameLimit() int64 { return max(4*l.MaxFrameBytes, 1<<20) }

func (c Config) check() error {
	switch {
	case c.NATS == nil:
		return holdover.New(holdover.CodeBadRequest, "gateway: no NATS connection")
	case c.JetStream == nil:
		return holdover.New(holdover.CodeBadRequest, "gateway: no JetStream context")
	case c.Tokens == nil:
		return holdover.New(holdover.CodeBadRequest, "gateway: no token table; without one nobody could connect")
	}
	seen := map[string]bool{}
	for _, s := range c.Services {
		if err := s.check(); err != nil {
			return err
		}
		if seen[s.Name] {
			return holdover.Newf(holdover.CodeBadRequest, "gateway: service %q is configured twice", s.Name)
		}
		seen[s.Name] = true
	}
	return nil
}
