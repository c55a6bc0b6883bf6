// Package embedded runs a NATS server with JetStream inside the process:
// the default for `holdover dev` and the real server every test talks to.
//
// It owns only server lifecycle; it never provisions streams (that is
// package streams) and never listens beyond loopback unless told to.
package embedded

import (
	"fmt"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Options configure an embedded server.
type Options struct {
	// StoreDir holds JetStream files. Empty means a memory-only server whose
	// file streams live in a temporary folder the caller should remove.
	StoreDir string
	// Host to listen on; default 127.0.0.1.
	Host string
	// Port to listen on; 0 picks a free one, -1 listens nowhere (in-process only).
	Port int
	// Name of the server; cluster peers need distinct names.
	Name string
	// Cluster, when set, joins the server to a JetStream cluster.
	Cluster *ClusterOptions
	// MaxConsumers is the default per-stream consumer limit; 0 keeps the
	// server's default, -1 removes it.
	MaxConsumers int
	// PingInterval and MaxPingsOut decide how soon the server closes the
	// connection of a client that stopped answering its pings: a frozen
	// process (SIGSTOP, a VM pause) keeps its TCP connection, and so every
	// lease and claim it holds, until then. The server pings a quiet
	// client every PingInterval and closes it after MaxPingsOut pings
	// went unanswered, so a frozen client is closed within
	// PingInterval × (MaxPingsOut+1). Zero keeps 5 s and 2.
	PingInterval time.Duration
	MaxPingsOut  int
}

// The ping settings `holdover dev` runs with, and docs/operations.md
// recommends for deployments: a frozen client is closed within 1.5 s.
const (
	LivenessPingInterval = 500 * time.Millisecond
	LivenessMaxPingsOut  = 2
)

// ClusterOptions join a server to a route cluster.
type ClusterOptions struct {
	Name   string
	Port   int
	Routes []string
}

// Server is a running embedded server.
type Server struct {
	*server.Server
}

// Start runs a server and waits until it accepts clients.
func Start(o Options) (*Server, error) {
	host := o.Host
	if host == "" {
		host = "127.0.0.1"
	}
	opts := &server.Options{
		ServerName:         o.Name,
		Host:               host,
		Port:               o.Port,
		JetStream:          true,
		StoreDir:           o.StoreDir,
		NoSigs:             true,
		MaxPayload:         1 << 20,
		JetStreamMaxMemory: 1 << 30,
		PingInterval:       5 * time.Second,
		MaxPingsOut:        2,
	}
	if o.PingInterval > 0 {
		opts.PingInterval = o.PingInterval
	}
	if o.MaxPingsOut > 0 {
		opts.MaxPingsOut = o.MaxPingsOut
	}
	if o.Port == 0 {
		opts.Port = server.RANDOM_PORT
	}
	if o.Port == -1 {
		opts.DontListen = true
	}
	if o.MaxConsumers != 0 {
		opts.JetStreamLimits.DefaultMaxConsumers = o.MaxConsumers
	}
	if c := o.Cluster; c != nil {
		opts.Cluster = server.ClusterOpts{Name: c.Name, Host: host, Port: c.Port}
		opts.Routes = server.RoutesFromStr(joinRoutes(c.Routes))
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("configure nats-server: %w", err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		return nil, fmt.Errorf("nats-server did not become ready in 10s")
	}
	return &Server{ns}, nil
}

// Stop shuts the server down and waits for it.
func (s *Server) Stop() {
	s.Shutdown()
	s.WaitForShutdown()
}

func joinRoutes(routes []string) string {
	out := ""
	for i, r := range routes {
		if i > 0 {
			out += ","
		}
		out += r
	}
	return out
}
