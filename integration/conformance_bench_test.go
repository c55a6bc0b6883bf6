package integration

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/holdover-dev/holdover/answerer"
	"github.com/holdover-dev/holdover/auth"
)

// The TypeScript SDK's foreground latency against the Go client's, in the
// same run (issue 9): askTimed → the request delivered to a Client, and the
// Client's answer → the result at the caller. Each caller runs in a process
// of its own (the SDK's conformance/asker.js, faultproc asker), one call at
// a time, calls of the two alternating; the worker and the Client are in
// this process; every part is on its role's credentials. Times are CLOCK_MONOTONIC nanoseconds, which Go (x/sys)
// and Node (process.hrtime) read alike, each taken where it happens. The
// ratios ts/go are the figure; a raw core round trip between two
// connections is measured between the calls for scale. Run without -race:
//
//	go test ./integration -run '^$' -bench BenchmarkConformanceAskLatency -benchtime 1000x
func BenchmarkConformanceAskLatency(b *testing.B) {
	w := newFGWorld(b) // deadlines on a fake clock never fire
	url := w.env.Server.ClientURL()
	roundTrip := fgRawRoundTrip(b, w)

	ans := w.answerer(w.as(auth.Gateway))
	askers := []*benchAsker{{name: "go", sid: "bench-go"}, {name: "ts", sid: "bench-ts"}}
	for _, a := range askers {
		a.answered = make(chan int64, 1)
		watch, err := ans.Watch(context.Background(), a.sid, a)
		require.NoError(b, err)
		b.Cleanup(func() { _ = watch.Close(context.Background()) })
		ref := w.live(a.sid)
		args := []string{"--nats", url, "--creds", w.creds(auth.Agent), "--session", a.sid, "--instance", ref.Instance, "--epoch", strconv.FormatUint(ref.Epoch, 10)}
		if a.name == "go" {
			a.start(b, exec.Command(fgProcBinary(b), append([]string{"asker"}, args...)...)) // Go's flags take -- too
		} else {
			a.start(b, exec.Command("node", append([]string{filepath.Join(filepath.Dir(tsRunner(b)), "asker.js")}, args...)...))
		}
	}
	for _, a := range askers {
		a.call(b, "warm") // the leases and the worker's lease watch are made once
	}

	raw := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		raw = append(raw, roundTrip())
		for _, a := range askers {
			a.call(b, fmt.Sprintf("c%d", i))
		}
	}
	b.StopTimer()
	goAsker, tsAsker := askers[0], askers[1]
	for _, leg := range []struct {
		name             string
		goTimes, tsTimes []time.Duration
	}{{"deliver", goAsker.deliver, tsAsker.deliver}, {"answer", goAsker.answer, tsAsker.answer}} {
		for _, q := range []struct {
			name string
			q    float64
		}{{"p50", 0.5}, {"p99", 0.99}} {
			g, t := fgQuantile(leg.goTimes, q.q), fgQuantile(leg.tsTimes, q.q)
			b.ReportMetric(fgMicros(g), "go-"+leg.name+"-"+q.name+"-µs")
			b.ReportMetric(fgMicros(t), "ts-"+leg.name+"-"+q.name+"-µs")
			b.ReportMetric(float64(t)/float64(g), "ts/go-"+leg.name+"-"+q.name)
		}
	}
	b.ReportMetric(fgMicros(fgQuantile(raw, 0.5)), "raw-rtt-p50-µs")
}

// benchAsker is one caller process and its Session's Client, which answers
// each request as it is delivered and notes when.
type benchAsker struct {
	name, sid string
	in        io.Writer
	out       *bufio.Reader
	answered  chan int64
	deliver   []time.Duration
	answer    []time.Duration
}

func (a *benchAsker) start(b *testing.B, cmd *exec.Cmd) {
	in, err := cmd.StdinPipe()
	require.NoError(b, err)
	out, err := cmd.StdoutPipe()
	require.NoError(b, err)
	fgSpawn(b, a.name+" asker", cmd)
	a.in, a.out = in, bufio.NewReader(out)
	line, err := a.out.ReadString('\n')
	require.NoError(b, err)
	require.Equal(b, "ready\n", line)
}

// call asks once and records both legs.
func (a *benchAsker) call(b *testing.B, id string) {
	_, err := fmt.Fprintf(a.in, "ask %s\n", id)
	require.NoError(b, err)
	line, err := a.out.ReadString('\n')
	require.NoError(b, err)
	var got string
	var sent, done int64
	_, err = fmt.Sscanf(line, "done %s %d %d", &got, &sent, &done)
	require.NoError(b, err, "%s asker said %q", a.name, line)
	require.Equal(b, id, got)
	at := <-a.answered
	if id != "warm" {
		a.deliver = append(a.deliver, time.Duration(at-sent))
		a.answer = append(a.answer, time.Duration(done-at))
	}
}

func (a *benchAsker) Request(d *answerer.Delivery) {
	at := monotonicNanos()
	_ = d.Settle(fgAnswer("yes")) // a refused settle leaves the caller waiting: the benchmark hangs, then fails
	a.answered <- at
}

func (a *benchAsker) Cancel(*answerer.Delivery, string) {}

// monotonicNanos reads CLOCK_MONOTONIC, the clock the askers report on.
func monotonicNanos() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) // always supported on Linux
	return ts.Nano()
}
