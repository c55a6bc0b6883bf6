package projection_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/ops/opstest"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/sessionlog"
)

// rejectCases are recorded events and why the fold cannot use them ("" when it can).
var rejectCases = []struct {
	name   string
	raw    string
	typ    string
	reason projection.Reason
	detail string
}{
	{"a timed header", `{"type":"request/header","at":"2026-01-01T00:00:00Z","data":{"tools":[{"name":"ask_user_question","inputSchema":` + timedSchema + `}]}}`, "", "", ""},
	{"a legacy header", `{"type":"request/header","at":"2026-01-01T00:00:00Z","data":{"tools":[{"name":"ask_user_question","inputSchema":` + legacySchema + `}]}}`, "", "", ""},
	{"a header without the question tool", `{"type":"request/header","at":"2026-01-01T00:00:00Z","data":{"tools":[{"name":"run_code","parameters":{}}]}}`, "", "", ""},
	{"an unknown type", `{"type":"agent/telemetry","at":"2026-01-01T00:00:00Z","data":{"cpu":1}}`, "", "", ""},
	{"not JSON", `{"type":"tool/result","data":{"callId":`, "unknown", projection.ReasonUndecodable, "not valid JSON"},
	{"no type", `{"at":"2026-01-01T00:00:00Z","data":{}}`, "unknown", projection.ReasonUndecodable, "no type"},
	{"a call without callId", `{"type":"tool/call","at":"2026-01-01T00:00:00Z","data":{"name":"x","arguments":{}}}`, "tool/call", projection.ReasonInvalidBody, "callId is required"},
	{"a user message without source", `{"type":"user/message","at":"2026-01-01T00:00:00Z","data":{"message":{"id":"m","role":"user","content":[]}}}`, "user/message", projection.ReasonInvalidBody, "message has no source"},
	{"the question tool under parameters", `{"type":"request/header","at":"2026-01-01T00:00:00Z","data":{"tools":[{"name":"run_code","inputSchema":{}},{"name":"ask_user_question","parameters":` + timedSchema + `}]}}`,
		"request/header", projection.ReasonToolSchemaKey, `tool 2 declares ask_user_question with its input schema under "parameters"`},
	{"the question tool under input_schema", `{"type":"request/header","at":"2026-01-01T00:00:00Z","data":{"tools":[{"name":"ask_user_question","input_schema":` + timedSchema + `}]}}`,
		"request/header", projection.ReasonToolSchemaKey, `under "input_schema"`},
	{"the question tool as a Chat Completions function", `{"type":"request/header","at":"2026-01-01T00:00:00Z","data":{"tools":[{"type":"function","function":{"name":"ask_user_question","parameters":` + timedSchema + `}}]}}`,
		"request/header", projection.ReasonToolSchemaKey, `under "function.parameters"`},
	{"a nameless tool", `{"type":"request/header","at":"2026-01-01T00:00:00Z","data":{"tools":[{"inputSchema":{}}]}}`, "request/header", projection.ReasonInvalidBody, "tool 1 has no name"},
}

// Issue 8: an event the fold cannot use says why, and Reject never
// changes the fold: the View is the same whatever Reject says.
func TestRejectSaysWhyTheFoldCannotUseAnEvent(t *testing.T) {
	for i, tc := range rejectCases {
		t.Run(tc.name, func(t *testing.T) {
			e, err := events.Decode([]byte(tc.raw))
			e.Seq = uint64(i + 1)
			r, rejected := projection.Reject(e, err)
			if tc.reason == "" {
				assert.False(t, rejected, "%v", r)
				return
			}
			require.True(t, rejected)
			assert.Equal(t, e.Seq, r.Seq)
			assert.Equal(t, tc.typ, r.Type)
			assert.Equal(t, tc.reason, r.Reason)
			assert.Contains(t, r.Detail, tc.detail)
		})
	}
}

// A misdeclared question tool leaves the Session untracked, as before:
// rejecting the header is reporting, not a second fold.
func TestAMisdeclaredQuestionToolStaysUntracked(t *testing.T) {
	raw := `{"type":"request/header","at":"2026-01-01T00:00:00Z","data":{"tools":[{"name":"ask_user_question","parameters":` + timedSchema + `}]}}`
	h, err := events.Decode([]byte(raw))
	require.NoError(t, err)
	h.Seq = 1
	call := events.New(t0, ask("c1"))
	call.Seq = 2
	v := projection.Fold([]events.Event{h, call})
	assert.False(t, v.Timed)
	assert.Empty(t, v.Active)
}

// Issue 8: the worker counts every rejected event under
// holdover_events_rejected_total{type, reason} and logs it once, with the
// Session, seq and reason, while the Session folds on past it.
func TestWorkerCountsAndLogsRejectedEventsOnce(t *testing.T) {
	e := newWorkerEnv(t)
	ctx := context.Background()
	var logs bytes.Buffer
	var last uint64
	publish := func(raw string) {
		t.Helper()
		msg := nats.NewMsg("holdover.session.s1.events")
		msg.Data = []byte(raw)
		msg.Header.Set(sessionlog.PrevHeader, strconv.FormatUint(last, 10))
		ack, err := e.JS.PublishMsg(ctx, msg, jetstream.WithExpectLastSequencePerSubject(last))
		require.NoError(t, err)
		last = ack.Sequence
	}
	for _, tc := range rejectCases {
		publish(tc.raw)
	}
	w := projection.NewWorker(e.store, e.replies, projection.WorkerConfig{
		Metrics: e.metrics,
		Logger:  slog.New(slog.NewJSONHandler(&syncBuffer{buf: &logs}, nil)),
	})
	running := opstest.Start(t, ops.Component{Name: "projection", Run: w.Run})
	e.waitFolded(t, "s1", last)
	require.NoError(t, running.Stop())

	want := map[[2]string]float64{}
	for _, tc := range rejectCases {
		if tc.reason != "" {
			want[[2]string{tc.typ, string(tc.reason)}]++
		}
	}
	for labels, n := range want {
		assert.Equal(t, n, value(e.metrics.EventsRejected.WithLabelValues(labels[0], labels[1])), "%v", labels)
	}

	type line struct {
		Msg, Session, Type, Detail string
		Seq                        uint64
		Reason                     projection.Reason
	}
	var seen []line
	for _, raw := range bytes.Split(bytes.TrimSpace(logs.Bytes()), []byte("\n")) {
		var l line
		require.NoError(t, json.Unmarshal(raw, &l))
		if l.Reason != "" {
			seen = append(seen, l)
		}
	}
	var n int
	for i, tc := range rejectCases {
		if tc.reason == "" {
			continue
		}
		require.Less(t, n, len(seen), "every rejected event is logged")
		l := seen[n]
		n++
		assert.Equal(t, "s1", l.Session)
		assert.Equal(t, uint64(i+1), l.Seq)
		assert.Equal(t, tc.reason, l.Reason)
		assert.Contains(t, l.Detail, tc.detail)
	}
	assert.Len(t, seen, n, "each rejected event is logged once")
}

// syncBuffer is a buffer the worker's goroutines may log into at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf *bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}
