package integration

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/streams"
)

func timedHeaderRecord() logRecord {
	return logRecord{body: &events.RequestHeader{Tools: []events.ToolSchema{{Name: holdover.ToolName, InputSchema: json.RawMessage(timedAskSchema)}}}}
}

func askRecord(callID, text string) logRecord {
	args, _ := json.Marshal(holdover.ToolArgs{Questions: []holdover.Question{{ID: "q", Question: text}}, Timeout: new(int64(30))})
	return logRecord{body: &events.ToolCall{CallID: callID, Name: holdover.ToolName, Arguments: args}}
}

// Bad input never stops the projection and never touches another
// Session: an event that does not decode is passed over (counted as
// rejected), an unknown type is passed over silently, invalid Session
// ids and oversized events are refused with BAD_REQUEST before anything
// is stored, a raw message under a wildcard subject is terminated, and a
// Session whose View outgrows a KV value fails alone with a logged,
// counted INTERNAL error while CaughtUp still serves it.
func TestProjectionPassesOverBadInput(t *testing.T) {
	env := embeddedtest.Start(t, streams.Config{Memory: true})
	ctx := context.Background()
	logs := newSessionLogs(env.JS, env.Topology.Sessions)
	workers := newFleet(t, env.Server.ClientURL(), projection.WorkerConfig{RetryDelay: 200 * time.Millisecond})
	workers.start()
	errorsWith := func(code holdover.Code) float64 {
		return counterValue(workers.metrics.Errors.WithLabelValues("projection", string(code)))
	}
	appendAll := func(sid string, recs ...logRecord) {
		t.Helper()
		for _, rec := range recs {
			_, err := logs.append(ctx, sid, rec)
			require.NoError(t, err)
		}
	}

	appendAll("bystander", timedHeaderRecord(), askRecord("c1", "Keep going?"))
	waitConverged(t, env.Topology.Questions, logs, 10*time.Second, "bystander")
	seen := recordViews(t, env.Topology.Questions)

	// Undecodable and unknown events in the middle of a Session.
	appendAll("victim",
		timedHeaderRecord(),
		askRecord("c1", "Deploy?"),
		logRecord{raw: []byte(`{"type":"tool/result","data":{"callId":`)},                                   // not JSON
		logRecord{raw: []byte(`{"type":"tool/call","at":"2026-01-01T00:00:00Z","data":{"name":"x"}}`)},      // no callId
		logRecord{raw: []byte(`{"type":"agent/telemetry","at":"2026-01-01T00:00:00Z","data":{"cpu":0.5}}`)}, // a newer version's type
		logRecord{body: &events.ToolResult{CallID: "c1", Name: holdover.ToolName, Content: events.Text(pendingResultText("c1"))}},
	)
	waitConverged(t, env.Topology.Questions, logs, 10*time.Second, "victim")
	v, _, err := projection.NewStore(env.JS, env.Topology.Sessions, env.Topology.Questions).Get(ctx, "victim")
	require.NoError(t, err)
	require.Len(t, v.Active, 1)
	assert.Equal(t, projection.Continued, v.Active[0].Status, "the events after the bad ones were folded")
	rejected := func(typ string, reason projection.Reason) float64 {
		return counterValue(workers.metrics.EventsRejected.WithLabelValues(typ, string(reason)))
	}
	// Rejections are reported as their deliveries are acknowledged, which
	// is after the write the convergence saw.
	require.Eventually(t, func() bool {
		return rejected("unknown", projection.ReasonUndecodable) > 0 && rejected("tool/call", projection.ReasonInvalidBody) > 0
	}, 10*time.Second, time.Millisecond)
	assert.Equal(t, float64(1), rejected("unknown", projection.ReasonUndecodable), "the event that is not JSON")
	assert.Equal(t, float64(1), rejected("tool/call", projection.ReasonInvalidBody), "the call without a callId")
	assert.Equal(t, float64(0), errorsWith(holdover.CodeBadRequest), "rejected events are no failures; the unknown type is neither")

	// Session ids that would be wildcards or invalid tokens are refused.
	stored := func() uint64 {
		info, err := env.Topology.Sessions.Info(ctx)
		require.NoError(t, err)
		return info.State.Msgs
	}
	msgs := stored()
	for _, sid := range []string{"a.b", "*", ">", "a b", "", strings.Repeat("x", streams.MaxIDLength+1)} {
		_, err := logs.append(ctx, sid, logRecord{body: &events.TurnStart{Turn: "t"}})
		assert.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err), "session id %q", sid)
	}
	for _, subject := range []string{"holdover.session.a.b.events", "holdover.session.a b.events"} {
		_, err := env.JS.Publish(ctx, subject, []byte(`{"type":"turn/start","data":{"turn":"t"}}`))
		assert.Error(t, err, "no stream takes %q", subject)
	}
	assert.Equal(t, msgs, stored(), "nothing was stored")

	// A raw publisher can store a message under a literal wildcard
	// subject, which names no Session: the worker terminates it.
	_, err = env.JS.Publish(ctx, "holdover.session.*.events", []byte(`{"type":"turn/start","data":{"turn":"t"}}`))
	require.NoError(t, err, "the server stores it")
	require.Eventually(t, func() bool { return errorsWith(holdover.CodeBadRequest) == 1 }, 10*time.Second, 10*time.Millisecond,
		"the worker counts the message it cannot fold")
	sids, err := projection.NewStore(env.JS, env.Topology.Sessions, env.Topology.Questions).Sessions(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"bystander", "victim"}, sids, "rebuild passes it over too")
	msgs = stored()

	// Oversized events are refused before they reach the log.
	huge := strings.Repeat("x", events.MaxEventBytes+1)
	_, err = logs.append(ctx, "victim", logRecord{body: &events.AssistantMessage{ID: "a", Content: events.Text(huge)}})
	assert.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err))
	assert.ErrorContains(t, err, "over the")
	_, err = logs.append(ctx, "victim", logRecord{raw: []byte(huge + huge)})
	assert.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err))
	assert.ErrorContains(t, err, nats.ErrMaxPayload.Error())
	assert.Equal(t, msgs, stored())

	// A Session whose View no longer fits one KV value fails alone.
	question := strings.Repeat("Is this what you meant? ", 22_000) // 528 KB: two outgrow a 1 MiB value
	appendAll("hoarder", timedHeaderRecord(), askRecord("big1", question))
	waitConverged(t, env.Topology.Questions, logs, 10*time.Second, "hoarder")
	lastFitting := logs.last("hoarder")
	appendAll("hoarder", askRecord("big2", question))
	require.Eventually(t, func() bool { return errorsWith(holdover.CodeInternal) > 0 }, 10*time.Second, 10*time.Millisecond,
		"the failed write is counted")
	appendAll("bystander", logRecord{body: &events.ToolResult{CallID: "c1", Name: holdover.ToolName, Content: events.Text(pendingResultText("c1"))}})
	waitConverged(t, env.Topology.Questions, logs, 10*time.Second, "bystander", "victim")

	store := projection.NewStore(env.JS, env.Topology.Sessions, env.Topology.Questions)
	hoarder, _, err := store.Get(ctx, "hoarder")
	require.NoError(t, err)
	assert.Equal(t, lastFitting, hoarder.LastSeq, "the bucket keeps the last View that fit")
	caughtUp, err := store.CaughtUp(ctx, "hoarder")
	require.NoError(t, err)
	assert.Equal(t, viewJSON(logs.want("hoarder", 0)), viewJSON(caughtUp), "CaughtUp still serves the Session (D6)")

	// The bystander was written once, for its own new event.
	var writes []uint64
	for _, sv := range seen() {
		if sv.sid == "bystander" {
			writes = append(writes, sv.view.LastSeq)
		}
	}
	assert.Equal(t, []uint64{logs.last("bystander")}, writes)
}
