// Command gateway serves Holdover's web Client and its WebSocket protocol
// (docs/protocol.md) against a NATS server or cluster. It is transport
// only: question state lives in the question workers. Run several behind
// a load balancer; each Client connection lives on one of them.
//
//	gateway --listen 127.0.0.1:8080 --nats nats://nats-1:4222 --tokens tokens.json
//
// The tokens file lists who may connect and which Sessions each may read
// and answer:
//
//	{"tokens": {"<token>": {"user": "ana", "sessions": ["s1", "s2"]}}}
//
// ["*"] grants every Session. Open http://<listen>/?token=<token>&session=<id>.
//
// An application that grants Sessions all day issues short-lived signed
// tokens instead (docs/protocol.md, "Signed tokens"): give the gateway its
// public key (--jwt-key, a PEM key or a JWKS file) or its JWKS URL
// (--jwks-url); the static file is then optional.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/holdover-dev/holdover/cmd/internal/gatewayproc"
	"github.com/holdover-dev/holdover/gateway"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/userquestions"
)

// config is what the flags say.
type config struct {
	listen  string
	tokens  string
	jwtKey  string
	jwt     gateway.JWTConfig
	origins stringList
	release time.Duration
	metrics string
	limits  gateway.Limits
	nats    ops.NATSConfig
	log     ops.LogConfig
}

func main() {
	var cfg config
	fs := flag.NewFlagSet("gateway", flag.ExitOnError)
	fs.StringVar(&cfg.listen, "listen", envOr("HOLDOVER_GATEWAY_LISTEN", "127.0.0.1:8080"), "address to serve HTTP and WebSocket on (env HOLDOVER_GATEWAY_LISTEN)")
	fs.StringVar(&cfg.tokens, "tokens", os.Getenv("HOLDOVER_GATEWAY_TOKENS"), "JSON file of access tokens (env HOLDOVER_GATEWAY_TOKENS)")
	fs.StringVar(&cfg.jwtKey, "jwt-key", os.Getenv("HOLDOVER_GATEWAY_JWT_KEY"), "file of the public key (PEM) or key set (JWKS) that signs access tokens (env HOLDOVER_GATEWAY_JWT_KEY)")
	fs.StringVar(&cfg.jwt.JWKSURL, "jwks-url", os.Getenv("HOLDOVER_GATEWAY_JWKS_URL"), "URL of the token issuer's key set, fetched at start and on rotation (env HOLDOVER_GATEWAY_JWKS_URL)")
	fs.StringVar(&cfg.jwt.Issuer, "jwt-issuer", os.Getenv("HOLDOVER_GATEWAY_JWT_ISSUER"), "required iss claim of signed tokens")
	fs.StringVar(&cfg.jwt.Audience, "jwt-audience", os.Getenv("HOLDOVER_GATEWAY_JWT_AUDIENCE"), "required aud claim of signed tokens")
	fs.DurationVar(&cfg.jwt.MaxLifetime, "jwt-max-lifetime", gateway.DefaultMaxTokenLifetime, "longest a signed token may live (exp - iat, or exp - now without iat); longer ones are refused")
	fs.Var(&cfg.origins, "origin", "extra browser origin allowed to open the WebSocket, e.g. app.example.com (repeatable)")
	fs.DurationVar(&cfg.release, "claim-release", userquestions.DefaultReleaseBound, "how long a Client's claim outlives this gateway's NATS connection")
	fs.StringVar(&cfg.metrics, "metrics-addr", gatewayproc.DefaultMetricsAddr, "address of /metrics and /healthz, apart from --listen (which never serves /metrics)")
	registerLimits(fs, &cfg.limits)
	cfg.nats.RegisterFlags(fs)
	cfg.log.RegisterFlags(fs)
	_ = fs.Parse(os.Args[1:])

	logger, err := cfg.log.Logger(os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		os.Exit(2)
	}
	if cfg.tokens == "" && cfg.jwtKey == "" && cfg.jwt.JWKSURL == "" {
		fmt.Fprintln(os.Stderr, "gateway: --tokens, --jwt-key or --jwks-url is required: without one nobody could connect")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, logger); err != nil {
		logger.Error("gateway stopped", "err", err)
		os.Exit(1)
	}
}

// run connects to NATS and serves until ctx ends.
func run(ctx context.Context, cfg config, logger *slog.Logger) error {
	tokens, err := loadTokens(ctx, cfg, logger)
	if err != nil {
		return err
	}
	nc, js, err := cfg.nats.Connect("holdover-gateway", logger, nats.ReconnectWait(gateway.DefaultReconnectWait))
	if err != nil {
		return err
	}
	defer nc.Close()
	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return err
	}
	return ops.Run(ctx, logger, gatewayproc.Components(nc, js, gatewayproc.Config{
		Listener: ln, Tokens: tokens, Origins: cfg.origins, ReleaseBound: cfg.release,
		Limits: cfg.limits, MetricsAddr: cfg.metrics, Logger: logger,
	})...)
}

// registerLimits binds the flags of the bounds on Clients, each defaulting
// to gateway.DefaultLimits.
func registerLimits(fs *flag.FlagSet, l *gateway.Limits) {
	def := gateway.DefaultLimits()
	fs.IntVar(&l.SendQueue, "send-queue-frames", def.SendQueue, "frames that may wait to be written to one Client; a Client further behind is closed as too slow (1008)")
	fs.IntVar(&l.SendQueueBytes, "send-queue-bytes", def.SendQueueBytes, "bytes that may wait to be written to one Client; a Client further behind is closed as too slow (1008)")
	fs.DurationVar(&l.WriteTimeout, "write-timeout", def.WriteTimeout, "how long one write to a Client may wait; a Client that takes nothing for that long is closed as too slow (1008)")
	fs.IntVar(&l.MaxUnauthenticated, "max-unauthenticated", def.MaxUnauthenticated, "connections that have not said hello yet, in all; one more is refused with 503")
	fs.IntVar(&l.MaxUnauthenticatedPerIP, "max-unauthenticated-per-ip", def.MaxUnauthenticatedPerIP, "connections from one remote address that have not said hello yet (behind a reverse proxy, all of them); one more is refused with 429")
}

// loadTokens reads the static token table and sets up signed tokens, as
// configured.
func loadTokens(ctx context.Context, cfg config, logger *slog.Logger) (*gateway.Tokens, error) {
	tokens := &gateway.Tokens{}
	if cfg.tokens != "" {
		var err error
		if tokens, err = gateway.LoadTokens(cfg.tokens); err != nil {
			return nil, err
		}
	}
	if cfg.jwtKey == "" && cfg.jwt.JWKSURL == "" {
		return tokens, nil
	}
	if cfg.jwtKey != "" {
		key, err := os.ReadFile(cfg.jwtKey)
		if err != nil {
			return nil, err
		}
		cfg.jwt.Key = key
	}
	cfg.jwt.Logger = logger
	return tokens, tokens.WithJWT(ctx, cfg.jwt)
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return fmt.Sprint([]string(*l)) }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}
