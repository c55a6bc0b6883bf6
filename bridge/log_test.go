package bridge

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/streams"
)

// Two writers of one Session log, each keeping its fold and reading on
// from where it ended: a writer that loses the fence to the other folds
// the other's events in and appends after them, and each fold equals the
// fold of the whole log read afresh.
func TestLogFoldReadsOn(t *testing.T) {
	ctx := context.Background()
	env := embeddedtest.Start(t, streams.Config{Memory: true})
	const sid = "fold-1"
	a := NewLog(env.JS, env.Topology.Sessions, sid, nil, 0)
	b := NewLog(env.JS, env.Topology.Sessions, sid, nil, 0)
	call := func(id string) events.Body {
		return &events.ToolCall{CallID: id, Name: "ask_user_question", Arguments: json.RawMessage(`{}`)}
	}

	require.NoError(t, a.Append(ctx, call("c1")))
	require.NoError(t, a.Append(ctx, &events.RequestHeader{})) // a folds its own appends in
	// b appends between a's read and a's append: a loses the fence, reads
	// on (b's read read a's events first), and decides again after b's.
	attempts := 0
	done, err := a.transact(ctx, func(f *folded) ([]events.Body, error) {
		attempts++
		if attempts == 1 {
			require.NoError(t, b.Append(ctx, call("c2")))
		}
		return []events.Body{&events.ToolResult{CallID: "c1", Content: events.Text("done")}}, nil
	})
	require.NoError(t, err)
	require.Equal(t, 2, attempts, "the first attempt lost the fence")
	require.Len(t, done, 1)
	require.Equal(t, uint64(4), done[0].seq, "appended after b's event")

	fresh := NewLog(env.JS, env.Topology.Sessions, sid, nil, 0)
	want := folds(t, fresh)
	require.Equal(t, uint64(4), want.last, "four events in a fresh stream")
	require.Equal(t, []string{"c2"}, openIDs(want))
	for _, l := range []*Log{a, b} {
		got := folds(t, l)
		require.Equal(t, want.last, got.last)
		require.Equal(t, openIDs(want), openIDs(got))
	}
}

// folds brings l's fold up to the log and returns it.
func folds(t *testing.T, l *Log) *folded {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	f, err := l.read(context.Background())
	require.NoError(t, err)
	return f
}

func openIDs(f *folded) []string {
	var ids []string
	for _, c := range f.open {
		ids = append(ids, c.CallID)
	}
	return ids
}
