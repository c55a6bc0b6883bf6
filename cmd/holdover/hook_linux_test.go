package main

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/holdover-dev/holdover/bridge"
	"github.com/holdover-dev/holdover/events"
)

// TestHookKilledBeforePrinting kills a hook that claimed the reply and is
// stuck printing it (its stdout is a full pipe): the reply is claimed but
// not admitted, a hook within the claim bound leaves it to the first, and
// once the claim runs out the next hook delivers it, exactly once.
func TestHookKilledBeforePrinting(t *testing.T) {
	w := newBridgeWorld(t)
	sid := bridge.NewID("hook")
	callID := w.queued(t, sid)

	stuck := fullPipe(t)
	cmd := w.hookCmd(t, w.dev.url, "post-tool-use.json", sid)
	cmd.Stdout = stuck
	require.NoError(t, cmd.Start())
	var claim events.Event
	require.Eventually(t, func() bool {
		cs := claimsOf(w.events(t, sid))
		if len(cs) == 0 {
			return false
		}
		claim = cs[0]
		return true
	}, 10*time.Second, 10*time.Millisecond, "the hook claimed the reply")
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	require.Zero(t, admitted(w.events(t, sid), callID), "killed before it printed: not admitted")

	run := w.hook(t, w.dev.url, "post-tool-use.json", sid)
	require.Equal(t, 0, run.code, run.stderr)
	if time.Since(claim.At) < hookClaimBound {
		require.Empty(t, run.stdout, "the claim still holds the reply for the first hook")
	}
	require.Eventually(t, func() bool {
		run = w.hook(t, w.dev.url, "post-tool-use.json", sid)
		return run.stdout != ""
	}, hookClaimBound+10*time.Second, 100*time.Millisecond, "the next hook after the claim bound delivers the reply")
	require.Equal(t, 0, run.code, run.stderr)
	require.Contains(t, run.stdout, callID)
	evts := w.events(t, sid)
	cs := claimsOf(evts)
	require.Len(t, cs, 2, "claimed again once")
	require.GreaterOrEqual(t, cs[1].At.Sub(claim.At), hookClaimBound, "not before the first claim ran out")
	require.Equal(t, 1, admitted(evts, callID), "admitted exactly once")
}

// fullPipe is the write end of a pipe whose buffer is full and whose read
// end nobody reads: a process that writes to it blocks.
func fullPipe(t *testing.T) *os.File {
	t.Helper()
	r, wr, err := os.Pipe()
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close(); _ = wr.Close() })
	size, err := unix.FcntlInt(wr.Fd(), unix.F_GETPIPE_SZ, 0)
	require.NoError(t, err)
	_, err = wr.Write(make([]byte, size))
	require.NoError(t, err)
	return wr
}
