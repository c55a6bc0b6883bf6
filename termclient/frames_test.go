package termclient

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
)

// The frames of docs/protocol.md parse; a known type missing a field it
// needs is BAD_FRAME; an unknown type is passed over (a newer gateway may
// send more).
func TestParseServerFrame(t *testing.T) {
	for _, ok := range []string{
		`{"type":"welcome","protocol":1,"clientId":"k7Qx2","user":"ana","sessions":["s-42"]}`,
		`{"type":"events","id":"w1","session":"s-42","events":[{"seq":7,"type":"tool/call","at":"2026-12-02T15:19:29Z","data":{}}]}`,
		`{"type":"events","id":"w1","session":"s-42","events":[]}`,
		`{"type":"view","id":"w1","session":"s-42","view":{"active":null,"settled":null,"timed":true,"lastSeq":12}}`,
		`{"type":"view","id":"w1","session":"s-42","view":null}`,
		`{"type":"ready","id":"w1","session":"s-42"}`,
		`{"type":"request","id":"R0","session":"s-42","event":"user-questions/request","payload":{}}`,
		`{"type":"cancel","id":"R0","session":"s-42","reason":"expired"}`,
		`{"type":"frame","id":"s3","data":{"remainingMs":58734}}`,
		`{"type":"close","id":"s3"}`,
		`{"type":"close","id":"s3","error":{"code":"INTERNAL","message":"claim consumer lost"}}`,
		`{"type":"result","id":"c2","result":{"accepted":true,"messageId":"m9"}}`,
		`{"type":"error","id":"c2","code":"REPLY_QUEUED","message":"a reply to call c1 is already queued"}`,
		`{"type":"error","code":"UNAUTHORIZED","message":"the token is not valid"}`,
	} {
		_, known, err := parseServerFrame([]byte(ok))
		require.NoError(t, err, ok)
		assert.True(t, known, ok)
	}
	for _, bad := range []string{
		`not json`, `[]`, `{}`, `{"type":""}`, `{"type":7}`,
		`{"type":"welcome"}`,
		`{"type":"events","id":"w1","session":"s","events":[{"type":"x"}]}`,
		`{"type":"view","id":"w1","session":"s","view":[]}`,
		`{"type":"ready","id":"w1"}`,
		`{"type":"request","id":"R0","session":"s"}`,
		`{"type":"cancel","id":"R0"}`,
		`{"type":"frame","data":{}}`,
		`{"type":"close","id":"s3","error":{}}`,
		`{"type":"error","message":"no code"}`,
	} {
		_, known, err := parseServerFrame([]byte(bad))
		assert.Equal(t, CodeBadFrame, holdover.CodeOf(err), bad)
		assert.False(t, known, bad)
	}
	f, known, err := parseServerFrame([]byte(`{"type":"hint","id":"x"}`))
	require.NoError(t, err)
	assert.False(t, known)
	assert.Equal(t, "hint", f.Type)
}

// FuzzParseServerFrame: a frame from the gateway parses, is passed over,
// or fails BAD_FRAME; it never panics, and a parsed one has what routing
// needs.
func FuzzParseServerFrame(f *testing.F) {
	for _, seed := range []string{
		`{"type":"welcome","protocol":1,"clientId":"a"}`,
		`{"type":"view","id":"w1","session":"s","view":{"lastSeq":1}}`,
		`{"type":"frame","id":"s1","data":{"closed":true}}`,
		`{"type":"close","id":"s1","error":{"code":"X"}}`,
		`{"type":"events","id":"w","session":"s","events":[{"seq":1}]}`,
		`{"type":"error","code":"E"}`,
		`{"type":"future"}`, `{`, `null`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, known, err := parseServerFrame(data)
		if err != nil {
			require.Equal(t, CodeBadFrame, holdover.CodeOf(err))
			require.False(t, known)
			return
		}
		if !known {
			return
		}
		if fr.Type != "welcome" && fr.Type != "error" {
			require.NotEmpty(t, fr.ID)
		}
		if fr.Type == "view" {
			require.True(t, json.Valid(fr.View))
		}
		_ = closedFrame(fr.Data)
	})
}

// A message is one frame, or from protocol 2 on an array of frames kept in
// order; an empty array or broken JSON in one is BAD_FRAME, and a frame
// nested in a batch is no frame.
func TestMessageFrames(t *testing.T) {
	one := `{"type":"ready","id":"w1","session":"s"}`
	frames, err := messageFrames([]byte(one))
	require.NoError(t, err)
	assert.Equal(t, []json.RawMessage{json.RawMessage(one)}, frames)

	frames, err = messageFrames([]byte(` [{"type":"view","id":"w1","session":"s","view":null},` + one + `]`))
	require.NoError(t, err)
	require.Len(t, frames, 2)
	f, known, err := parseServerFrame(frames[0])
	require.NoError(t, err)
	assert.True(t, known)
	assert.Equal(t, "view", f.Type)
	assert.JSONEq(t, one, string(frames[1]))

	for _, bad := range []string{`[]`, `[{"type":"ready"}`} {
		_, err := messageFrames([]byte(bad))
		assert.Equal(t, CodeBadFrame, holdover.CodeOf(err), bad)
	}
	frames, err = messageFrames([]byte(`[[` + one + `]]`))
	require.NoError(t, err)
	_, _, err = parseServerFrame(frames[0])
	assert.Equal(t, CodeBadFrame, holdover.CodeOf(err))
}
