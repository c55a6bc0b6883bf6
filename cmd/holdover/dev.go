package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"path/filepath"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover/askuser"
	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/cmd/internal/agentproc"
	"github.com/holdover-dev/holdover/cmd/internal/gatewayproc"
	"github.com/holdover-dev/holdover/cmd/internal/notifyproc"
	"github.com/holdover-dev/holdover/cmd/internal/questionworker"
	"github.com/holdover-dev/holdover/embedded"
	"github.com/holdover-dev/holdover/gateway"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/streams"
)

// runDev runs the whole system in one process: an embedded NATS server
// with JetStream files under --data, the question worker, the gateway with
// the web UI, and a demo agent with a scripted model. Ctrl-C
// stops the components, then the server, so nothing is left half written.
func runDev(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var (
		data        string
		natsPort    int
		metricsAddr string
		listen      string
		noDemo      bool
		logCfg      ops.LogConfig
		notifyCfg   notifyproc.Config
	)
	fs := newFlags("dev", "", devSummary, stderr)
	fs.StringVar(&data, "data", ".holdover", "folder for JetStream files; kept across runs")
	fs.IntVar(&natsPort, "nats-port", 4222, "port of the embedded NATS server on 127.0.0.1 (0 picks a free one)")
	fs.StringVar(&metricsAddr, "metrics-addr", questionworker.DefaultMetricsAddr, "address of /metrics and /healthz")
	fs.StringVar(&listen, "listen", "127.0.0.1:8080", "address of the gateway: the web UI and its WebSocket")
	fs.BoolVar(&noDemo, "no-demo", false, "do not run the demo agent (Session "+demoSession+")")
	notifyCfg.RegisterWebhookFlags(fs, "webhook-format")
	logCfg.RegisterFlags(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("dev takes no arguments, got %q", fs.Args())}
	}
	logger, err := logCfg.Logger(stderr)
	if err != nil {
		return usageError{err.Error()}
	}
	dir, err := filepath.Abs(data)
	if err != nil {
		return err
	}

	// Secure by default: every part connects with its own role's
	// credentials, kept (with the keys) in the data folder.
	setup, err := auth.Init(filepath.Join(dir, "auth"))
	if err != nil {
		return err
	}
	creds := func(r auth.Role) string { return setup.Creds(auth.DefaultTenant, r) }
	srv, err := embedded.Start(embedded.Options{StoreDir: dir, Port: natsPort, Name: "holdover-dev", Auth: setup,
		PingInterval: embedded.LivenessPingInterval, MaxPingsOut: embedded.LivenessMaxPingsOut})
	if err != nil {
		return fmt.Errorf("start NATS on 127.0.0.1:%d: %w", natsPort, err)
	}
	defer srv.Stop()
	url := srv.ClientURL()
	as := func(r auth.Role, name string, extra ...nats.Option) (*nats.Conn, jetstream.JetStream, error) {
		return ops.NATSConfig{URL: url, Creds: creds(r)}.Connect(name, logger, extra...)
	}
	admin, adminJS, err := as(auth.Admin, "holdover-dev-provision")
	if err != nil {
		return err
	}
	defer admin.Close() // it queues the demo's prompt, a user's message
	if _, err = streams.Provision(ctx, adminJS, streams.Config{}); err != nil {
		return err
	}
	nc, js, err := as(auth.Worker, "holdover-dev")
	if err != nil {
		return err
	}
	defer nc.Close()

	// Components start in order; each may rely on the ones before it.
	metrics := ops.NewMetrics()
	components, err := questionworker.Components(ctx, nc, js, questionworker.Config{MetricsAddr: metricsAddr, Metrics: metrics, Logger: logger, NoProvision: true})
	if err != nil {
		return err
	}
	token, err := devToken()
	if err != nil {
		return err
	}
	tokens, err := gateway.NewTokens(map[string]gateway.Grant{token: {User: "dev", Sessions: []string{"*"}}})
	if err != nil {
		return err
	}
	gwConn, gwJS, err := as(auth.Gateway, "holdover-dev-gateway", nats.ReconnectWait(gateway.DefaultReconnectWait))
	if err != nil {
		return err
	}
	defer gwConn.Close()
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	// The gateway's metrics join the worker's on --metrics-addr.
	components = append(components, gatewayproc.Components(gwConn, gwJS, gatewayproc.Config{Listener: ln, Tokens: tokens, Metrics: metrics, Logger: logger})...)
	notifying := "off (--webhook URL turns it on)"
	if len(notifyCfg.Webhooks) > 0 {
		// The link carries this run's token, so a click opens the card;
		// the gateway listens on loopback only.
		notifyCfg.WebURL = fmt.Sprintf("http://%s/?token=%s", ln.Addr(), token)
		notifyCfg.Notify.Metrics, notifyCfg.Notify.Logger = metrics, logger
		notifyConn, notifyJS, err := as(auth.Notifier, "holdover-dev-notify")
		if err != nil {
			return err
		}
		defer notifyConn.Close()
		notifier, err := notifyproc.Component(ctx, notifyJS, notifyCfg)
		if err != nil {
			return err
		}
		components = append(components, ops.NATSConnection(notifyConn), notifier)
		notifying = fmt.Sprintf("%d webhook(s), %s bodies", len(notifyCfg.Webhooks), notifyCfg.Format)
	}
	if !noDemo {
		agentConn, _, err := as(auth.Agent, "holdover-dev-agent")
		if err != nil {
			return err
		}
		defer agentConn.Close()
		agent, err := agentproc.Component(agentConn, agentproc.Config{
			Session: demoSession, Prompt: demoPrompt, PromptConn: admin, Pool: true, Script: demoScript,
			Ask: askuser.Config{Mode: askuser.ModeTimed}, Logger: logger, Metrics: metrics,
		})
		if err != nil {
			return err
		}
		components = append(components, ops.NATSConnection(agentConn), agent)
	}

	agentFlags := hostFlags(ops.NATSConfig{URL: url, Creds: creds(auth.Agent)})
	fmt.Fprintf(stdout, `Holdover dev is running.
  web UI   http://%s/?token=%s&session=%s
  NATS     %s  (authentication on; JetStream files and credentials in %s)
  metrics  http://%s/metrics   health  http://%s/healthz
  notify   %s

The demo agent asks a timed question in Session %q, keeps working when it
times out, and takes the late answer. Answer it in the web UI, or with
  holdover answer --gateway http://%s --token %s %s

Look at state with the nats CLI, as the read-only operator:
  %s
  nats kv get --raw %s <session-id>
  nats stream ls
Answering takes the gateway's rights (an operator may not):
  %s
  nats --context holdover-dev-gateway req %s.%s '{"session":...}'
or with this binary:
  holdover inspect --nats %s --creds %s <session-id>

Use it from Claude Code (docs/mcp.md has Cursor, Codex CLI and Claude Desktop):
  %s
and for late answers at every step, the hooks in .claude/settings.json:
  holdover mcp install claude-code %s

Ctrl-C stops.
`, ln.Addr(), token, demoSession, url, dir, metricsAddr, metricsAddr, notifying, demoSession, ln.Addr(), token, demoSession,
		natsContext("holdover-dev", url, auth.Operator, creds(auth.Operator), true), streams.QuestionsBucket,
		natsContext("holdover-dev-gateway", url, auth.Gateway, creds(auth.Gateway), false), streams.ServicePrefix, streams.EndpointAnswer,
		url, creds(auth.Operator), ClaudeMCPAdd("holdover", agentFlags), agentFlags)
	return ops.Run(ctx, logger, components...)
}

// natsContext is the nats CLI command that saves a context for role: its
// credentials and the inbox prefix its permissions allow.
func natsContext(name, url string, r auth.Role, creds string, selectIt bool) string {
	line := fmt.Sprintf("nats context save %s --server %s --creds %s --inbox-prefix %s", name, url, creds, r.InboxPrefix())
	if selectIt {
		line += " --select"
	}
	return line
}

// devToken is a fresh random access token for this run's web UI.
func devToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}
