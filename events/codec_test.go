package events

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/holdover-dev/holdover"
)

// reference is the codec Encode and Decode used before the fast one: the
// standard library, whose results the fast codec must give.
var reference = codec{marshal: json.Marshal, unmarshal: json.Unmarshal}

// sameDecode asserts that the fast codec decodes data as the reference
// does: both fail with BAD_REQUEST, or both give the same event.
func sameDecode(t *testing.T, data []byte) {
	t.Helper()
	want, wantErr := reference.decode(data)
	got, err := fast.decode(data)
	if (wantErr == nil) != (err == nil) {
		t.Fatalf("input %s\nencoding/json: %v\nfast codec:    %v", clip(data), wantErr, err)
	}
	if err != nil {
		if code := holdover.CodeOf(err); code != holdover.CodeBadRequest {
			t.Fatalf("input %s: fast codec fails with code %q, want BAD_REQUEST: %v", clip(data), code, err)
		}
		return
	}
	_, wantOffset := want.At.Zone()
	_, offset := got.At.Zone()
	if got.Type != want.Type || !got.At.Equal(want.At) || offset != wantOffset ||
		!bytes.Equal(got.Data, want.Data) || !reflect.DeepEqual(got.Body, want.Body) {
		t.Fatalf("input %s\nencoding/json: %s %s %#v %s\nfast codec:    %s %s %#v %s",
			clip(data), want.Type, want.At, want.Body, clip(want.Data), got.Type, got.At, got.Body, clip(got.Data))
	}
}

func clip(b []byte) string {
	if len(b) > 200 {
		return fmt.Sprintf("%q… (%d bytes)", b[:200], len(b))
	}
	return fmt.Sprintf("%q", b)
}

// decodeEdges are inputs where JSON decoders are known to part ways.
var decodeEdges = []string{
	// Keys: case-insensitive match, escaped, duplicated, folded by Unicode.
	`{"TYPE":"turn/start","Data":{"Turn":"t"}}`,
	`{"\u0074ype":"turn/start","data":{"turn":"t"}}`,
	`{"type":"turn/start","data":{"turn":"a"},"data":{"turn":"b"}}`,
	`{"type":"tool/call","data":{"callId":"a","name":"n"},"data":{"callId":"b"}}`,
	`{"type":"tool/call","data":{"callId":"a","name":"n","callId":"b"}}`,
	`{"type":"turn/start","data":{"turn":"t","Turn":"u"}}`,
	`{"type":"agent/inbox/claimed","data":{"messageid":"n","messageId":"m"}}`,
	`{"type":"user/message","data":{"message":{"id":"m","role":"user","source":{"kind":"user","Kind":"robot"}}}}`,
	`{"type":"user/message","data":{"message":{"id":"m","role":"user","source":{"\u212aind":"user"}}}}`,
	"{\"type\":\"user/message\",\"data\":{\"message\":{\"id\":\"m\",\"role\":\"user\",\"source\":{\"\u212aind\":\"user\"}}}}",
	"{\"type\":\"user/message\",\"data\":{\"message\":{\"id\":\"m\",\"role\":\"user\",\"source\":{\"k\u0131nd\":\"user\"}}}}",
	// Strings: escapes, surrogates, invalid UTF-8 (replaced in values, kept in Data), control bytes.
	`{"type":"agent/inbox/claimed","data":{"messageId":"\/\b\f\n\r\t\"\\\u00e9\u0000"}}`,
	`{"type":"agent/inbox/claimed","data":{"messageId":"\uD83D\uDE00 \uDE00\uD83D \ud800"}}`,
	`{"type":"agent/inbox/claimed","data":{"messageId":"\u12"}}`,
	`{"type":"x","data":{"a":"\x"}}`,
	"{\"type\":\"turn/start\",\"data\":{\"turn\":\"t\xff\xfe\"}}",
	"{\"type\":\"agent/inbox/claimed\",\"data\":{\"messageId\":\"\xed\xa0\x80 \xc0\xaf \xf4\x90\x80\x80\"}}",
	"{\"type\":\"x\xff\",\"data\":{\"a\":\"\xff\"}}",
	"{\"type\":\"turn/start\",\"data\":{\"turn\":\"t\x01\"}}",
	"{\"type\":\"turn/start\",\"data\":{\"turn\":\"t\n\"}}",
	// Numbers and mismatched kinds.
	`{"type":"step/end","data":{"turn":"t","step":1.0}}`,
	`{"type":"step/end","data":{"turn":"t","step":1e2}}`,
	`{"type":"step/end","data":{"turn":"t","step":-0}}`,
	`{"type":"step/end","data":{"turn":"t","step":99999999999999999999}}`,
	`{"type":"step/end","data":{"turn":"t","step":"1"}}`,
	`{"type":"step/end","data":{"turn":"t","step":null}}`,
	`{"type":"agent/inbox/spliced","data":{"message":{"id":"m","role":"user","source":{"kind":"user"}},"inboxSeq":-1}}`,
	`{"type":"tool/result","data":{"callId":"c","isError":1}}`,
	`{"type":"tool/result","data":{"callId":"c","error":{"name":"n","code":5}}}`,
	`{"type":"tool/result","data":{"callId":"c","content":[null,{"type":"text"}],"error":null}}`,
	`{"type":"tool/result","data":{"callId":"c","content":{}}}`,
	`{"type":5}`,
	`{"type":null,"data":null}`,
	// Recorded JSON kept as it is: spacing, null, other kinds.
	`{"type":"tool/call","data":{"callId":"c","name":"n","arguments":  {"a" : [1, 2]}  }}`,
	`{"type":"tool/call","data":{"callId":"c","name":"n","arguments":null}}`,
	`{"type":"request/header","data":{"tools":[{"name":"n","inputSchema":{"type":"object"}},{"name":"m"}]}}`,
	`{"type":"request/header","data":{"tools":null}}`,
	`{"type":"request/header","data":null}`,
	`{"type":"request/header","data":"x"}`,
	`{"type":"x","data": { "a" : [1,{"b":"c"},"d",true,false,null,-1.5e+10] } }`,
	`{"type":"x","data":null}`,
	`{"type":"turn/start","data":{"turn":"t","extra":{"deep":[{"x":1}]}},"other":[1,2,3]}`,
	// Syntax errors, in skipped values too.
	`{"type":"x","data":{"a":tru}}`,
	`{"type":"x","data":{"a":[1,2,]}}`,
	`{"type":"x","data":{"a":01}}`,
	`{"type":"x","data":{"a":1.}}`,
	`{"type":"x","data":{"a":.5}}`,
	`{"type":"x","data":{"a":1e}}`,
	`{"type":"x","data":{"a":NaN}}`,
	`{"type":"turn/start","data":{"turn":'t'}}`,
	`{"type":"turn/start","data":{"turn":"t",}}`,
	`{"type":"turn/start","data":{"turn":"t"},"other":[1,2,}`,
	`{"type":"x","data":}`,
	`{"type":"x" "data":1}`,
	`{"type":"turn/start","data":{"turn":"t"}} x`,
	`{"type":"turn/start","data":{"turn":"t"}}{}`,
	"\t{\"type\":\"x\"}\r\n ",
	"\ufeff{\"type\":\"x\"}",
	`null`, `true`, `[]`, `""`, `1`, `{}`, ` `,
	// Times.
	`{"type":"turn/start","at":null,"data":{"turn":"t"}}`,
	`{"type":"turn/start","at":"2026-01-01T00:00:00.123456789+05:30","data":{"turn":"t"}}`,
	`{"type":"turn/start","at":"2026-01-01T00:00:00","data":{"turn":"t"}}`,
	`{"type":"turn/start","at":"2026-01-01 00:00:00Z","data":{"turn":"t"}}`,
	`{"type":"turn/start","at":"2026-01-01T00:00:00z","data":{"turn":"t"}}`,
	`{"type":"turn/start","at":"2026-01-01T00:00:00+24:00","data":{"turn":"t"}}`,
	`{"type":"turn/start","at":"9999-12-31T23:59:59-01:00","data":{"turn":"t"}}`,
	`{"type":"turn/start","at":"\u0032026-01-01T00:00:00Z","data":{"turn":"t"}}`,
	`{"type":"turn/start","at":5,"data":{"turn":"t"}}`,
}

// FuzzDecodeMatchesStd holds the fast codec to encoding/json's results:
// every input either fails in both or decodes to the same event.
func FuzzDecodeMatchesStd(f *testing.F) {
	for _, body := range samples() {
		data, err := reference.encode(New(at, body))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range decodeEdges {
		f.Add([]byte(s))
	}
	f.Fuzz(sameDecode)
}

// Nesting deeper than encoding/json's limit of 10000 fails in both, in a
// known body and in a skipped value alike, without exhausting the stack.
func TestDecodeMatchesStdOnDeepNesting(t *testing.T) {
	for _, depth := range []int{100, 10001, 200000} {
		for _, typ := range []Type{TypeToolCall, "tool/progress"} {
			for _, open := range []string{"[", `{"a":`} {
				end := strings.NewReplacer("[", "]", `{"a":`, "}").Replace(open)
				args := strings.Repeat(open, depth) + "1" + strings.Repeat(end, depth)
				input := `{"type":"` + string(typ) + `","data":{"callId":"c","name":"n","arguments":` + args + `}}`
				t.Run(fmt.Sprintf("%s %d %s", typ, depth, open), func(t *testing.T) { sameDecode(t, []byte(input)) })
			}
		}
	}
}

// FuzzEncodeMatchesStd holds the fast codec to encoding/json's bytes: an
// event encodes to the same message, or fails, in both. The recorded form
// must not change with the codec.
func FuzzEncodeMatchesStd(f *testing.F) {
	f.Add("t", "<b>&amp;</b> \u2028\u2029 \x7f \xff \xed\xa0\x80", []byte(`{"a": [1, 2] }`), int64(0))
	f.Add("", "", []byte(`{"broken"`), int64(-1))
	f.Add("\x00", "\"\\", []byte(" null "), int64(1<<62))
	f.Add("a", "b", []byte(`"\u003c<>&\u2028"`), int64(253402300799))
	f.Add("a", "b", []byte("\"\xff\""), int64(-62135596800))
	f.Add("a", "b", []byte(`1e999`), int64(5))
	f.Fuzz(func(t *testing.T, s1, s2 string, raw []byte, n int64) {
		at := time.Unix(n, n%1e9).In(time.FixedZone("", int(n%50000)))
		for _, body := range []Body{
			&RequestHeader{Turn: s1, Model: s2, Tools: []ToolSchema{{Name: "n", Description: s2, InputSchema: raw}}},
			&AssistantMessage{Turn: s1, ID: "a" + s2, Content: []Part{{Type: s1, Text: s2}}},
			&ToolCall{Turn: s1, CallID: "c" + s2, Name: s1 + "n", Arguments: raw},
			&ToolResult{Turn: s1, CallID: "c", Name: s2, Content: Text(s1), IsError: n%2 == 0, Error: &ToolError{Name: s1, Code: holdover.Code(s2)}},
			&PTCDispatch{Turn: s1, ParentCallID: "p", CallID: "c", Name: "n", Arguments: raw, Content: Text(s2)},
			&UserMessage{Turn: s1, Message: Message{ID: "m", Role: "r" + s2, Content: Text(s1), Source: QuestionReply("c" + s2)}},
			&InboxSpliced{Turn: s1, Message: Message{ID: "m", Role: "r", Content: Text(s2), Source: Source{Kind: SourceUser}}, InboxSeq: uint64(n)},
			&InboxDiscarded{Turn: s1, MessageID: "m" + s2, Reason: s1},
			&StepEnd{Turn: "t" + s1, Step: int(n)},
		} {
			e := New(at, body)
			want, wantErr := reference.encode(e)
			got, err := fast.encode(e)
			if (wantErr == nil) != (err == nil) || !bytes.Equal(got, want) {
				t.Fatalf("%s %+v\nencoding/json: %s %v\nfast codec:    %s %v", e.Type, body, want, wantErr, got, err)
			}
		}
	})
}
