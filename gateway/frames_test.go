package gateway

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/clientwire"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/schemas"
)

func TestParseFrameChecksWhatEachTypeNeeds(t *testing.T) {
	for frame, wantErr := range map[string]bool{
		`{"type":"hello","protocol":1,"client":"web"}`: false,
		`{"type":"hello"}`: true,
		`{"type":"watch","id":"w1","session":"s1","fromSeq":3}`:                        false,
		`{"type":"watch","id":"w1"}`:                                                   true,
		`{"type":"unwatch","id":"w1"}`:                                                 false,
		`{"type":"unwatch"}`:                                                           true,
		`{"type":"settle","id":"r","value":{"answers":[]}}`:                            false,
		`{"type":"settle","id":"r","value":null}`:                                      true,
		`{"type":"reject","id":"r","error":{"code":"ASK_TIMED_OUT","message":"m"}}`:    false,
		`{"type":"reject","id":"r","error":{}}`:                                        true,
		`{"type":"delegate","id":"r"}`:                                                 false,
		`{"type":"open","id":"s","method":"a.b","params":{}}`:                          false,
		`{"type":"open","id":"s","method":"a.b"}`:                                      true,
		`{"type":"call","id":"c","method":"a.b","params":{"session":"s1"}}`:            false,
		`{"type":"call","id":"c","params":{}}`:                                         true,
		`{"type":"close","id":"s"}`:                                                    false,
		`{"type":"inbox","id":"i"}`:                                                    false,
		`{"type":"inbox"}`:                                                             true,
		`{"type":"something-newer","x":1}`:                                             false,
		`{"id":"x"}`:                                                                   true,
		`{"type":"watch","id":"w1","session":"s1","fromSeq":"3"}`:                      true,
		`{"type":"watch","id":"w1","session":"s1","fromSeq":-1}`:                       true,
		`{"type":"close","id":"s"} trailing`:                                           true,
		`{"type":"close","id":"` + strings.Repeat("x", clientwire.MaxIDBytes+1) + `"}`: true,
	} {
		_, err := parseFrame([]byte(frame))
		if wantErr {
			require.Error(t, err, frame)
			assert.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err), frame)
		} else {
			assert.NoError(t, err, frame)
		}
	}
}

// The id of a frame that is refused comes back, so the Client can tell
// which call or watch failed.
func TestParseFrameKeepsTheIDOfARefusedFrame(t *testing.T) {
	f, err := parseFrame([]byte(`{"type":"call","id":"c7","method":"nodot","params":{}}`))
	require.NoError(t, err) // the method is checked when the call is made
	assert.Equal(t, "c7", f.head.ID)
	f, err = parseFrame([]byte(`{"type":"call","id":"c8"}`))
	require.Error(t, err)
	assert.Equal(t, "c8", f.head.ID)
	f, err = parseFrame([]byte(`{"type":"watch","id":"w9","session":"s1","fromSeq":"3"}`))
	require.Error(t, err)
	assert.Equal(t, "w9", f.head.ID, "a field of the wrong type still leaves the id readable")
}

// The table takes every frame a Client sends, and only those: a frame
// type added to the wire without a spec here (or the reverse) fails.
func TestEveryClientFrameHasASpec(t *testing.T) {
	var wire []string
	for _, s := range clientwire.ClientFrames() {
		wire = append(wire, s.Type)
	}
	var table []string
	for typ, spec := range clientFrames {
		require.Equal(t, typ, spec.typ)
		table = append(table, typ)
	}
	slices.Sort(wire)
	slices.Sort(table)
	assert.Equal(t, wire, table)
}

// Only hello may come first; the frames that release something are the
// ones docs/protocol.md promises are never refused by the rate limit.
func TestTheTableSaysWhatTheProtocolSays(t *testing.T) {
	var first, released []string
	for typ, spec := range clientFrames {
		if spec.needs == needsNothing {
			first = append(first, typ)
		}
		if spec.pace == releases {
			released = append(released, typ)
		}
	}
	assert.Equal(t, []string{clientwire.TypeHello}, first)

	doc, err := os.ReadFile("../docs/protocol.md")
	require.NoError(t, err)
	promise := regexp.MustCompile("(?s)Frames that only\\s+answer or end something — (.*?) — are never refused").FindSubmatch(doc)
	require.NotNil(t, promise, "docs/protocol.md lists the frames the rate limit never refuses")
	var documented []string
	for _, m := range regexp.MustCompile("`([a-z]+)`").FindAllSubmatch(promise[1], -1) {
		documented = append(documented, string(m[1]))
	}
	slices.Sort(documented)
	slices.Sort(released)
	assert.Equal(t, documented, released)
}

// FuzzParseFrame: whatever a Client sends, parsing returns a frame or a
// BAD_REQUEST error, never a panic, and an accepted frame of a type the
// table knows has its type's fields.
func FuzzParseFrame(f *testing.F) {
	for _, seed := range []string{
		`{"type":"hello","protocol":1,"client":"web","token":"t"}`,
		`{"type":"watch","id":"w1","session":"s1","fromSeq":1}`,
		`{"type":"settle","id":"r","value":{"answers":[{"id":"q","selected":["a"]}]}}`,
		`{"type":"reject","id":"r","error":{"code":"ASK_TIMED_OUT","message":"m"}}`,
		`{"type":"open","id":"s","method":"userQuestions.attachWait","params":{"session":"s1","callId":"c1"}}`,
		`{"type":"call","id":"c","method":"userQuestions.answer","params":{"session":"s1"}}`,
		`{"type":"close","id":"s"}`, `{}`, `[]`, `null`, `{"type":1}`, "\xff",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, err := parseFrame(data)
		if err != nil {
			if holdover.CodeOf(err) != holdover.CodeBadRequest {
				t.Fatalf("error without BAD_REQUEST: %v", err)
			}
			return
		}
		if fr.head.Type == "" {
			t.Fatal("accepted a frame without a type")
		}
		if fr.spec == nil {
			return
		}
		if fr.body.FrameType() != fr.head.Type {
			t.Fatalf("a %s frame decoded as a %s", fr.head.Type, fr.body.FrameType())
		}
		switch b := fr.body.(type) {
		case clientwire.SettleFrame:
			if !json.Valid(b.Value) || !strings.HasPrefix(strings.TrimSpace(string(b.Value)), "{") {
				t.Fatalf("accepted a settle without a value object: %q", data)
			}
		case clientwire.CallFrame:
			if b.ID == "" || b.Method == "" || !json.Valid(fr.head.Params) {
				t.Fatalf("accepted a call without id, method or params: %q", data)
			}
		}
	})
}

// The methods the wire names for Clients are the ones the gateway's
// bindings serve, as calls or as streams.
func TestTheWireMethodsAreServed(t *testing.T) {
	services := map[string]Service{}
	for _, s := range []Service{UserQuestions(nil), Sessions()} {
		services[s.Name] = s
	}
	for method, stream := range map[string]bool{
		clientwire.MethodAnswer: false, clientwire.MethodView: false,
		clientwire.MethodDiscard: false, clientwire.MethodAttachWait: true,
	} {
		name, op, ok := splitMethod(method)
		require.True(t, ok, method)
		svc, ok := services[name]
		require.True(t, ok, "no binding serves %s", method)
		if stream {
			assert.Contains(t, svc.Streams, op, method)
		} else {
			assert.Contains(t, svc.Calls, op, method)
		}
	}
}

// A watch writes its frames from bytes it encoded once (watch.go), not
// through clientwire's structs: they still fit their schemas and read
// back as the wire's frames.
func TestAWatchWritesTheWiresFrames(t *testing.T) {
	w := newWatch(nil, "w1", "s-42", 0)
	at := time.Date(2026, 12, 2, 15, 19, 29, 0, time.UTC)
	evs := [][]byte{
		encodeEvent(events.Event{Seq: 7, Type: "turn/start", At: at, Data: json.RawMessage(`{"turn":"t1"}`)}),
		encodeEvent(events.Event{Seq: 9, Type: "something/newer", At: at}),
	}
	for _, c := range []struct {
		data []byte
		want clientwire.GatewayFrame
	}{
		{w.eventsFrame(evs), clientwire.EventsFrame{Type: clientwire.TypeEvents, ID: "w1", Session: "s-42", Events: []clientwire.SessionEvent{
			{Seq: 7, Type: "turn/start", At: at, Data: json.RawMessage(`{"turn":"t1"}`)}, {Seq: 9, Type: "something/newer", At: at}}}},
		{w.viewFrame(json.RawMessage(`{"active":[],"settled":[],"timed":true,"lastSeq":12}`)),
			clientwire.ViewFrame{Type: clientwire.TypeView, ID: "w1", Session: "s-42", View: json.RawMessage(`{"active":[],"settled":[],"timed":true,"lastSeq":12}`)}},
		{w.viewFrame(nil), clientwire.ViewFrame{Type: clientwire.TypeView, ID: "w1", Session: "s-42", View: json.RawMessage("null")}},
		{w.readyFrame, clientwire.ReadyFrame{Type: clientwire.TypeReady, ID: "w1", Session: "s-42"}},
	} {
		problems, err := schemas.Validate("websocket/gateway/"+c.want.FrameType()+".json", c.data)
		require.NoError(t, err)
		assert.Empty(t, problems, "%s", c.data)
		got, err := clientwire.ReadGatewayFrame(c.data)
		require.NoError(t, err, "%s", c.data)
		assert.Equal(t, c.want, got)
	}
}
