package gateway

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
)

func TestParseFrameChecksWhatEachTypeNeeds(t *testing.T) {
	for frame, wantErr := range map[string]bool{
		`{"type":"hello","protocol":1,"client":"web"}`: false,
		`{"type":"hello"}`: true,
		`{"type":"watch","id":"w1","session":"s1","fromSeq":3}`:                     false,
		`{"type":"watch","id":"w1"}`:                                                true,
		`{"type":"unwatch","id":"w1"}`:                                              false,
		`{"type":"unwatch"}`:                                                        true,
		`{"type":"settle","id":"r","value":{"answers":[]}}`:                         false,
		`{"type":"settle","id":"r","value":null}`:                                   true,
		`{"type":"reject","id":"r","error":{"code":"ASK_TIMED_OUT","message":"m"}}`: false,
		`{"type":"reject","id":"r","error":{}}`:                                     true,
		`{"type":"delegate","id":"r"}`:                                              false,
		`{"type":"open","id":"s","method":"a.b","params":{}}`:                       false,
		`{"type":"open","id":"s","method":"a.b"}`:                                   true,
		`{"type":"call","id":"c","method":"a.b","params":{"session":"s1"}}`:         false,
		`{"type":"call","id":"c","params":{}}`:                                      true,
		`{"type":"close","id":"s"}`:                                                 false,
		`{"type":"something-newer","x":1}`:                                          false,
		`{"id":"x"}`:                                                                true,
		`{"type":"watch","id":"w1","session":"s1","fromSeq":"3"}`:                   true,
		`{"type":"close","id":"s"} trailing`:                                        true,
		`{"type":"close","id":"` + string(make([]byte, maxIDBytes+1)) + `"}`:        true,
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
	assert.Equal(t, "c7", f.ID)
	f, err = parseFrame([]byte(`{"type":"call","id":"c8"}`))
	require.Error(t, err)
	assert.Equal(t, "c8", f.ID)
}

// FuzzParseFrame: whatever a Client sends, parsing returns a frame or a
// BAD_REQUEST error, never a panic, and an accepted frame has its type's
// fields.
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
		if fr.Type == "" {
			t.Fatal("accepted a frame without a type")
		}
		switch fr.Type {
		case typeSettle:
			if !isObject(fr.Value) || !json.Valid(fr.Value) {
				t.Fatalf("accepted a settle without a value object: %q", data)
			}
		case typeOpen, typeCall:
			if fr.ID == "" || fr.Method == "" || !isObject(fr.Params) {
				t.Fatalf("accepted a %s without id, method or params: %q", fr.Type, data)
			}
		}
	})
}
