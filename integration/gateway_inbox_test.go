package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/gateway"
	"github.com/holdover-dev/holdover/streams"
)

// inboxView is a projection value with the given active calls (each "callId:status") and one settled call.
func inboxView(calls ...string) []byte {
	active := make([]map[string]any, 0, len(calls))
	for i, c := range calls {
		id, status, _ := strings.Cut(c, ":")
		active = append(active, map[string]any{"callId": id, "status": status, "seq": i + 1,
			"questions": []map[string]any{{"id": "db", "question": "Which database?"}}})
	}
	v, _ := json.MarshalIndent(map[string]any{"active": active, "settled": []map[string]any{{"callId": "old", "questions": []any{}, "answers": []any{}, "late": false, "seq": 1}}, "timed": true, "lastSeq": 9}, "", "  ")
	return v
}

// inboxSummary is one Session of a summary frame as the test reads it.
type inboxSummary struct {
	Session string `json:"session"`
	Active  []struct {
		CallID string `json:"callId"`
		Status string `json:"status"`
	} `json:"active"`
	Settled int `json:"settled"`
}

func summaries(t testing.TB, f gwFrame) []inboxSummary {
	var out []inboxSummary
	require.NoError(t, json.Unmarshal(f.Sessions, &out))
	return out
}

func TestGatewayInboxSummarisesTheGrantedSessionsAndFollowsTheirChanges(t *testing.T) {
	// Issue 13 item 1: one feed for every granted Session's questions, grants enforced; "*" lists
	// the Sessions the projection bucket holds. Summaries drop the settled list and keep its count.
	w := newGWWorld(t, gateway.Limits{})
	ctx := context.Background()
	kv := w.env.Topology.Questions
	for sid, v := range map[string][]byte{"s1": inboxView("c1:open"), "s2": inboxView("c2:continued", "c3:open"), "s3": inboxView("c9:continued")} {
		_, err := kv.Put(ctx, sid, v)
		require.NoError(t, err)
	}

	ana := w.dial(gwTokenAna)
	ana.welcome()
	ana.send(map[string]any{"type": "inbox", "id": "i1"})
	got := map[string]inboxSummary{}
	for {
		f := ana.take("ana's inbox", func(f gwFrame) bool { return f.ID == "i1" })
		if f.Type == "ready" {
			break
		}
		require.Equal(t, "summary", f.Type)
		for _, s := range summaries(t, f) {
			got[s.Session] = s
		}
	}
	require.Len(t, got, 2, "ana's token grants s1 and s2 only")
	require.Equal(t, "open", got["s1"].Active[0].Status)
	require.Len(t, got["s2"].Active, 2)
	require.Equal(t, 1, got["s2"].Settled)

	bo := w.dial(gwTokenBo)
	bo.welcome()
	bo.send(map[string]any{"type": "inbox", "id": "i1"})
	all := 0
	for {
		f := bo.take("bo's inbox", func(f gwFrame) bool { return f.ID == "i1" })
		if f.Type == "ready" {
			break
		}
		all += len(summaries(t, f))
	}
	require.Equal(t, 3, all, `a "*" token sees every Session the bucket holds`)

	// Live: s2's questions are all answered; s3 changes, which ana may not see.
	_, err := kv.Put(ctx, "s3", inboxView("c10:open"))
	require.NoError(t, err)
	_, err = kv.Put(ctx, "s2", inboxView())
	require.NoError(t, err)
	f := ana.take("s2's change", gwTypeID("summary", "i1"))
	s := summaries(t, f)
	require.Len(t, s, 1)
	require.Equal(t, "s2", s[0].Session)
	require.Empty(t, s[0].Active)
	_, leaked := ana.find(func(f gwFrame) bool {
		return f.Type == "summary" && string(f.Sessions) != "" && json.Valid(f.Sessions) && containsSession(t, f, "s3")
	})
	require.False(t, leaked, "ana never hears of s3")
	bo.take("s3's change", func(f gwFrame) bool { return f.Type == "summary" && containsSession(t, f, "s3") })

	// close ends the feed like a stream. Frames are handled in order: once a second feed is
	// ready, the close went through.
	ana.send(map[string]any{"type": "close", "id": "i1"})
	ana.send(map[string]any{"type": "inbox", "id": "i2"})
	ana.take("the second feed", gwTypeID("ready", "i2"))
	_, err = kv.Put(ctx, "s1", inboxView())
	require.NoError(t, err)
	ana.take("s1's change on the second feed", func(f gwFrame) bool { return f.Type == "summary" && f.ID == "i2" && containsSession(t, f, "s1") })
	_, late := ana.find(func(f gwFrame) bool { return f.Type == "summary" && f.ID == "i1" && containsSession(t, f, "s1") })
	require.False(t, late, "a closed inbox sends nothing more")
}

func containsSession(t testing.TB, f gwFrame, sid string) bool {
	for _, s := range summaries(t, f) {
		if s.Session == sid {
			return true
		}
	}
	return false
}

// BenchmarkGatewayInbox measures what a page needs to show N Sessions'
// questions: one inbox feed against one watch per Session (raised limits:
// a connection holds 32 watches and sends 50 frames a second by default). One op is a new connection
// from hello until everything is in (the inbox's ready, or every watch's);
// frame-bytes/op is what it read. In the watch case each Session has one
// event in its log.
func BenchmarkGatewayInbox(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("sessions=%d/inbox", n), func(b *testing.B) { benchInbox(b, n, false) })
		if n <= 100 {
			b.Run(fmt.Sprintf("sessions=%d/watches", n), func(b *testing.B) { benchInbox(b, n, true) })
		}
	}
}

func benchInbox(b *testing.B, n int, watches bool) {
	env := embeddedtest.Start(b, streams.Config{Memory: true})
	url := env.Server.ClientURL()
	gwConn, _ := embeddedtest.Connect(b, url)
	_, wsURL := serveGateway(b, url, gwConn, gateway.Limits{MaxWatches: n + 1, SendQueue: 4 * n, FramesPerSecond: float64(10 * n), Burst: 2 * n}, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	for i := range n {
		_, err := env.Topology.Questions.Put(ctx, fmt.Sprintf("bench-%d", i), inboxView(fmt.Sprintf("c%d:continued", i)))
		require.NoError(b, err)
	}
	var bytes int
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	for b.Loop() {
		dctx, cancel := context.WithTimeout(ctx, fgPatience)
		ws, _, err := websocket.Dial(dctx, wsURL+"?token="+gwTokenBo, nil)
		require.NoError(b, err)
		ws.SetReadLimit(1 << 24)
		frames := []string{`{"type":"hello","protocol":1,"client":"bench"}`}
		if watches {
			for i := range n {
				frames = append(frames, fmt.Sprintf(`{"type":"watch","id":"w%d","session":"bench-%d","fromSeq":1}`, i, i))
			}
		} else {
			frames = append(frames, `{"type":"inbox","id":"i1"}`)
		}
		for _, f := range frames {
			require.NoError(b, ws.Write(dctx, websocket.MessageText, []byte(f)))
		}
		want := 1
		if watches {
			want = n
		}
		for ready := 0; ready < want; {
			_, data, err := ws.Read(dctx)
			require.NoError(b, err)
			bytes += len(data)
			var f gwFrame
			require.NoError(b, json.Unmarshal(data, &f))
			require.NotEqual(b, "error", f.Type, "%s", data)
			if f.Type == "ready" {
				ready++
			}
		}
		_ = ws.Close(websocket.StatusNormalClosure, "")
		cancel()
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(bytes)/float64(b.N), "frame-bytes/op")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N), "alloc-bytes/op")
}
