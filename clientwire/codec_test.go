package clientwire

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// readEdges are inputs where a JSON decoder may part from encoding/json:
// key matching, duplicates, escapes, invalid UTF-8, numbers, mismatched
// kinds, raw values kept as they are, syntax errors and trailing data.
var readEdges = []string{
	// Key matching: encoding/json folds case (and K, ſ), the last duplicate wins.
	`{"TYPE":"watch","ID":"w1","Session":"s1","FROMSEQ":3}`,
	`{"type":"watch","id":"w1","session":"s1","session":"s2"}`,
	`{"type":"watch","type":"call","id":"c1","method":"a.b","params":{}}`,
	`{"type":"watch","id":"w1","ſession":"s6"}`,
	"{\"type\":\"hello\",\"protocol\":2,\"\u212aind\":\"x\",\"toKen\":\"t\"}",
	`{"type":"call","id":"c1","method":"a.b","params":{"session":"s1"},"Params":{"session":"s6"}}`,
	`{"type":"reject","id":"r","error":{"code":"X","Code":"Y","message":"m"}}`,
	// Strings: escapes, surrogates, invalid UTF-8, control bytes.
	`{"type":"watch","id":"\/\b\f\n\r\t\"\\\u00e9\u0000","session":"s"}`,
	`{"type":"watch","id":"\uD83D\uDE00 \uDE00\uD83D \ud800","session":"s"}`,
	`{"type":"watch","id":"\u12","session":"s"}`,
	"{\"type\":\"watch\",\"id\":\"w\xff\xfe\",\"session\":\"s\"}",
	"{\"type\":\"call\",\"id\":\"c\",\"method\":\"a.b\",\"params\":{\"a\":\"\xed\xa0\x80\"}}",
	"{\"type\":\"watch\",\"id\":\"w\x01\",\"session\":\"s\"}",
	// Numbers and mismatched kinds.
	`{"type":"watch","id":"w","session":"s","fromSeq":1.0}`,
	`{"type":"watch","id":"w","session":"s","fromSeq":1e2}`,
	`{"type":"watch","id":"w","session":"s","fromSeq":-0}`,
	`{"type":"watch","id":"w","session":"s","fromSeq":99999999999999999999}`,
	`{"type":"watch","id":"w","session":"s","fromSeq":"1"}`,
	`{"type":"watch","id":"w","session":"s","fromSeq":null}`,
	`{"type":"hello","protocol":2.5}`,
	`{"type":"hello","protocol":true}`,
	`{"type":"welcome","protocol":2,"clientId":"k","sessions":"s1"}`,
	`{"type":"summary","id":"i","sessions":[{"session":"s","settled":-1,"deadlines":{"c":"2026-01-01T00:00:00+05:30","d":null}}]}`,
	`{"type":"summary","id":"i","sessions":[{"session":"s","deadlines":{"c":"2026-01-01 00:00:00Z"}}]}`,
	`{"type":"events","id":"w","session":"s","events":[{"seq":1,"type":"t","at":"2026-01-01T00:00:00Z","data":  {"a" : [1, 2]}  }]}`,
	`{"type":"events","id":"w","session":"s","events":[null,{"seq":2}]}`,
	`{"type":"close","id":"s","error":null}`,
	`{"type":"close","id":"s","error":{"code":5}}`,
	`{"type":5}`, `{"type":null,"id":null}`,
	// Raw values kept as they are: spacing, null, other kinds.
	`{"type":"settle","id":"r","value":  {"answers" : [ ]}  }`,
	`{"type":"call","id":"c","method":"a.b","params":null}`,
	`{"type":"view","id":"w","session":"s","view":null}`,
	`{"type":"frame","id":"s","data":"x"}`,
	`{"type":"result","id":"c","result": [1,{"b":"c"},"d",true,false,null,-1.5e+10] }`,
	// Syntax errors, in skipped values too, and what follows the object.
	`{"type":"settle","id":"r","value":{"a":tru}}`,
	`{"type":"settle","id":"r","value":{"a":[1,2,]}}`,
	`{"type":"settle","id":"r","value":{"a":01}}`,
	`{"type":"settle","id":"r","value":{"a":1.}}`,
	`{"type":"close","id":"s",}`,
	`{"type":"close","id":"s","x":}`,
	`{"type":"close" "id":"s"}`,
	`{"type":"close","id":"s"} x`,
	`{"type":"close","id":"s"}{}`,
	"\t{\"type\":\"close\",\"id\":\"s\"}\r\n ",
	"\ufeff{\"type\":\"close\",\"id\":\"s\"}",
	`null`, `true`, `[]`, `""`, `1`, `{}`, ` `, ``,
}

// FuzzReadMatchesStd holds the wire's decoder to encoding/json's results:
// every input reads, as a head and as every frame type, to the same value
// in both, or fails in both.
func FuzzReadMatchesStd(f *testing.F) {
	for _, s := range readEdges {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		types := []reflect.Type{reflect.TypeFor[Head]()}
		for _, s := range slices.Concat(clientFrames, gatewayFrames) {
			types = append(types, reflect.TypeOf(s.Zero))
		}
		for _, typ := range types {
			want, got := reflect.New(typ), reflect.New(typ)
			wantErr := json.Unmarshal(data, want.Interface())
			gotErr := unmarshal(data, got.Interface())
			if (wantErr == nil) != (gotErr == nil) {
				t.Fatalf("%s from %q:\nencoding/json: %v\nthe wire's:    %v", typ, data, wantErr, gotErr)
			}
			if wantErr == nil && !reflect.DeepEqual(want.Interface(), got.Interface()) {
				t.Fatalf("%s from %q:\nencoding/json: %+v\nthe wire's:    %+v", typ, data, want.Elem(), got.Elem())
			}
		}
	})
}

// Nesting deeper than encoding/json's limit of 10000 fails in both, in a
// member the frame has and in one it passes over alike.
func TestReadMatchesStdOnDeepNesting(t *testing.T) {
	for _, depth := range []int{100, 10001, 200000} {
		for _, member := range []string{"params", "other"} {
			for _, open := range []string{"[", `{"a":`} {
				end := strings.NewReplacer("[", "]", `{"a":`, "}").Replace(open)
				value := strings.Repeat(open, depth) + "1" + strings.Repeat(end, depth)
				input := []byte(`{"type":"call","id":"c","method":"a.b","` + member + `":` + value + `}`)
				t.Run(fmt.Sprintf("%s %d %s", member, depth, open), func(t *testing.T) {
					for _, v := range []any{&Head{}, &CallFrame{}} {
						wantErr := json.Unmarshal(input, v)
						gotErr := unmarshal(input, v)
						if (wantErr == nil) != (gotErr == nil) {
							t.Fatalf("%T:\nencoding/json: %v\nthe wire's:    %v", v, wantErr, gotErr)
						}
					}
				})
			}
		}
	}
}
