package main

import (
	"context"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/answerer"
	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/bench"
	"github.com/holdover-dev/holdover/caller"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/liveroot"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/streams"
)

// BenchmarkMCPAskLatency: the timed question through holdover mcp against
// the Go client, in the same run, on one `holdover dev`. Each call's two
// legs are timed in this process: the call sent (an MCP tools/call over
// the host's stdio; caller.Client.AskTimed) → the request delivered to a
// user's Client, and the Client's answer → the result back at the caller
// (the MCP tool result; AskTimed's return). Calls of the two alternate. The
// MCP path adds the stdio hop and the bridge's Session-log writes: the
// tool/call before the ask, the tool/result and the hand-over check after
// it. The ratios mcp/go are the figure. Run without -race:
//
//	go test ./cmd/holdover -run '^$' -bench BenchmarkMCPAskLatency -benchtime 300x
func BenchmarkMCPAskLatency(b *testing.B) {
	ctx := context.Background()
	dev := startDev(b, "--no-demo")
	conn := func(r auth.Role) *natsConn {
		opts, err := ops.NATSConfig{Creds: dev.creds(r)}.Options()
		require.NoError(b, err)
		nc, js := embeddedtest.Connect(b, dev.url, opts...)
		return &natsConn{nc: nc, js: js}
	}
	user, err := answerer.New(conn(auth.Gateway).nc, answerer.Config{})
	require.NoError(b, err)
	b.Cleanup(func() { require.NoError(b, user.Close()) })

	// The Go client: a live root of its own Session and its caller lease.
	agent := conn(auth.Agent)
	goClient, err := caller.New(ctx, agent.nc, caller.Config{})
	require.NoError(b, err)
	b.Cleanup(func() { require.NoError(b, goClient.Close()) })
	kv, err := agent.js.KeyValue(ctx, streams.RootsBucket)
	require.NoError(b, err)
	goSid := "bench-go"
	epoch, err := liveroot.New(kv).Register(ctx, goSid, "bench-go-runtime")
	require.NoError(b, err)
	ref := &holdover.AgentRef{Instance: "bench-go-runtime", Epoch: epoch}

	// The MCP host: holdover mcp as a process on its stdio.
	mcpSid := "bench-mcp"
	client := mcp.NewClient(&mcp.Implementation{Name: "bench-host", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(buildHoldover(b), "mcp", "--nats", dev.url, "--creds", dev.creds(auth.Agent), "--session", mcpSid)}, nil)
	require.NoError(b, err)
	b.Cleanup(func() { _ = cs.Close() })

	questions := []holdover.Question{{ID: "db", Question: "Which database?", Options: []holdover.Option{{Label: "PostgreSQL"}, {Label: "SQLite"}}}}
	legs := map[string]*benchLegs{}
	for _, sid := range []string{goSid, mcpSid} {
		l := &benchLegs{delivered: make(chan time.Time, 1)}
		watch, err := user.Watch(ctx, sid, l)
		require.NoError(b, err)
		b.Cleanup(func() { _ = watch.Close(context.Background()) })
		legs[sid] = l
	}
	askGo := func(id string) {
		out, err := goClient.AskTimed(ctx, holdover.AskTimedRequest{Session: goSid, CallID: id, Agent: ref, Questions: questions, TimeoutMs: 30_000})
		require.NoError(b, err)
		require.False(b, out.Pending)
	}
	askMCP := func(string) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: holdover.ToolName, Arguments: map[string]any{"questions": questions, "timeout": 30}})
		require.NoError(b, err)
		require.False(b, res.IsError, resultText(res))
	}
	measure := func(l *benchLegs, ask func(string), id string, record bool) {
		sent := time.Now()
		ask(id)
		done := time.Now()
		at := <-l.delivered
		if record {
			l.deliver = append(l.deliver, at.Sub(sent))
			l.answer = append(l.answer, done.Sub(at))
		}
	}
	measure(legs[goSid], askGo, "warm", false) // the leases, the worker's lease watch, the bridge's Open
	measure(legs[mcpSid], askMCP, "warm", false)

	b.ResetTimer()
	for i := range b.N {
		measure(legs[goSid], askGo, fmt.Sprintf("c%d", i), true)
		measure(legs[mcpSid], askMCP, "", true)
	}
	b.StopTimer()
	goLegs, mcpLegs := legs[goSid], legs[mcpSid]
	for _, leg := range []struct {
		name string
		g, m []time.Duration
	}{{"deliver", goLegs.deliver, mcpLegs.deliver}, {"answer", goLegs.answer, mcpLegs.answer}} {
		for _, q := range []struct {
			name string
			q    float64
		}{{"p50", 0.5}, {"p99", 0.99}} {
			g, m := bench.Samples(leg.g).Quantile(q.q), bench.Samples(leg.m).Quantile(q.q)
			b.ReportMetric(micros(g), "go-"+leg.name+"-"+q.name+"-µs")
			b.ReportMetric(micros(m), "mcp-"+leg.name+"-"+q.name+"-µs")
			b.ReportMetric(float64(m)/float64(g), "mcp/go-"+leg.name+"-"+q.name)
		}
	}
}

// natsConn is one role's connection.
type natsConn struct {
	nc *nats.Conn
	js jetstream.JetStream
}

// benchLegs is one Session's Client, which answers each request as it is
// delivered and notes when, and the legs measured.
type benchLegs struct {
	delivered       chan time.Time
	deliver, answer []time.Duration
}

func (l *benchLegs) Request(d *answerer.Delivery) {
	at := time.Now()
	_ = d.Settle([]holdover.Answer{{ID: "db", Selected: []string{"SQLite"}}}) // a refused settle leaves the call waiting: the benchmark fails on its timeout
	l.delivered <- at
}

func (l *benchLegs) Cancel(*answerer.Delivery, string) {}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
