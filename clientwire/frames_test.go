package clientwire_test

import (
	"encoding/json"
	"go/build"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/clientwire"
)

// The frames of docs/protocol.md read; a known type missing a field it
// needs is BAD_FRAME; an unknown type is passed over (a newer gateway may
// send more).
func TestReadGatewayFrame(t *testing.T) {
	for _, ok := range []string{
		`{"type":"welcome","protocol":1,"clientId":"k7Qx2","user":"ana","sessions":["s-42"]}`,
		`{"type":"events","id":"w1","session":"s-42","events":[{"seq":7,"type":"tool/call","at":"2026-12-02T15:19:29Z","data":{}}]}`,
		`{"type":"events","id":"w1","session":"s-42","events":[]}`,
		`{"type":"view","id":"w1","session":"s-42","view":{"active":null,"settled":null,"timed":true,"lastSeq":12}}`,
		`{"type":"view","id":"w1","session":"s-42","view":null}`,
		`{"type":"ready","id":"w1","session":"s-42"}`,
		`{"type":"ready","id":"i1"}`,
		`{"type":"summary","id":"i1","sessions":[{"session":"s-42","active":[],"settled":3,"lastSeq":12,"deadlines":{"c1":"2026-12-02T15:20:29.5Z"}}]}`,
		`{"type":"request","id":"R0","session":"s-42","event":"user-questions/request","payload":{}}`,
		`{"type":"cancel","id":"R0","session":"s-42","reason":"expired"}`,
		`{"type":"frame","id":"s3","data":{"remainingMs":58734}}`,
		`{"type":"close","id":"s3"}`,
		`{"type":"close","id":"s3","error":{"code":"INTERNAL","message":"claim consumer lost"}}`,
		`{"type":"result","id":"c2","result":{"accepted":true,"messageId":"m9"}}`,
		`{"type":"error","id":"c2","code":"REPLY_QUEUED","message":"a reply to call c1 is already queued"}`,
		`{"type":"error","code":"UNAUTHORIZED","message":"the token is not valid"}`,
	} {
		f, err := clientwire.ReadGatewayFrame([]byte(ok))
		require.NoError(t, err, ok)
		require.NotNil(t, f, ok)
		var head clientwire.Head
		require.NoError(t, json.Unmarshal([]byte(ok), &head))
		assert.Equal(t, head.Type, f.FrameType(), ok)
	}
	for _, bad := range []string{
		`not json`, `[]`, `{}`, `{"type":""}`, `{"type":7}`,
		`{"type":"welcome"}`,
		`{"type":"events","id":"w1","session":"s","events":[{"type":"x"}]}`,
		`{"type":"view","id":"w1","session":"s","view":[]}`,
		`{"type":"view","id":"w1","session":"s"}`,
		`{"type":"ready"}`,
		`{"type":"request","id":"R0","session":"s"}`,
		`{"type":"cancel","id":"R0"}`,
		`{"type":"frame","data":{}}`,
		`{"type":"close","id":"s3","error":{}}`,
		`{"type":"error","message":"no code"}`,
		`{"type":"summary","id":"i1","sessions":[{"session":"s","settled":"3"}]}`,
	} {
		f, err := clientwire.ReadGatewayFrame([]byte(bad))
		assert.Equal(t, clientwire.CodeBadFrame, holdover.CodeOf(err), bad)
		assert.Nil(t, f, bad)
	}
	f, err := clientwire.ReadGatewayFrame([]byte(`{"type":"hint","id":"x"}`))
	require.NoError(t, err)
	assert.Nil(t, f, "a type this version does not know is passed over")
}

// What a frame lacks is named, every field of it at once, with the code of
// the side that reads it.
func TestDecodeNamesWhatAFrameLacks(t *testing.T) {
	_, err := clientwire.Decode[clientwire.CallFrame]([]byte(`{"type":"call"}`))
	require.Error(t, err)
	assert.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err), "the gateway reads Client frames: BAD_REQUEST")
	for _, what := range []string{"an id", "a method", "a params object"} {
		assert.Contains(t, err.Error(), "a call frame needs "+what)
	}
	_, err = clientwire.Decode[clientwire.WatchFrame]([]byte(`{"type":"watch","id":"w1","session":"s1","fromSeq":-1}`))
	assert.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err))
	_, err = clientwire.Decode[clientwire.RequestFrame]([]byte(`{"type":"request","id":"r"}`))
	assert.Equal(t, clientwire.CodeBadFrame, holdover.CodeOf(err), "Clients read gateway frames: BAD_FRAME")
}

// Each frame type is listed once, on the side that sends it, and its Go
// type answers to it.
func TestTheCatalogListsEachFrameOnce(t *testing.T) {
	for _, side := range []struct {
		name   string
		specs  []clientwire.Spec
		client bool
	}{{"client", clientwire.ClientFrames(), true}, {"gateway", clientwire.GatewayFrames(), false}} {
		var types []string
		for _, s := range side.specs {
			types = append(types, s.Type)
			assert.Equal(t, s.Type, s.Zero.FrameType())
			_, client := s.Zero.(clientwire.ClientFrame)
			_, gateway := s.Zero.(clientwire.GatewayFrame)
			assert.Equal(t, side.client, client, s.Type)
			assert.Equal(t, !side.client, gateway, s.Type)
			assert.Equal(t, "websocket/"+side.name+"/"+s.Type+".json", s.Schema())
		}
		assert.Len(t, slices.Compact(slices.Sorted(slices.Values(types))), len(types), "a %s frame type listed twice", side.name)
	}
}

// A message is one frame, or from protocol 2 on an array of frames kept in
// order; an empty array or broken JSON in one is BAD_FRAME, and a frame
// nested in a batch is no frame.
func TestSplitMessage(t *testing.T) {
	one := `{"type":"ready","id":"w1","session":"s"}`
	frames, err := clientwire.SplitMessage([]byte(one))
	require.NoError(t, err)
	assert.Equal(t, []json.RawMessage{json.RawMessage(one)}, frames)

	frames, err = clientwire.SplitMessage([]byte(` [{"type":"view","id":"w1","session":"s","view":null},` + one + `]`))
	require.NoError(t, err)
	require.Len(t, frames, 2)
	f, err := clientwire.ReadGatewayFrame(frames[0])
	require.NoError(t, err)
	assert.Equal(t, clientwire.TypeView, f.FrameType())
	assert.JSONEq(t, one, string(frames[1]))

	for _, bad := range []string{`[]`, `[{"type":"ready"}`} {
		_, err := clientwire.SplitMessage([]byte(bad))
		assert.Equal(t, clientwire.CodeBadFrame, holdover.CodeOf(err), bad)
	}
	frames, err = clientwire.SplitMessage([]byte(`[[` + one + `]]`))
	require.NoError(t, err)
	_, err = clientwire.ReadGatewayFrame(frames[0])
	assert.Equal(t, clientwire.CodeBadFrame, holdover.CodeOf(err))
}

// FuzzReadGatewayFrame: a frame from the gateway reads, is passed over, or
// fails BAD_FRAME; it never panics, and one read has what routing needs.
func FuzzReadGatewayFrame(f *testing.F) {
	for _, seed := range []string{
		`{"type":"welcome","protocol":1,"clientId":"a"}`,
		`{"type":"view","id":"w1","session":"s","view":{"lastSeq":1}}`,
		`{"type":"frame","id":"s1","data":{"closed":true}}`,
		`{"type":"close","id":"s1","error":{"code":"X"}}`,
		`{"type":"events","id":"w","session":"s","events":[{"seq":1}]}`,
		`{"type":"summary","id":"i","sessions":[{"session":"s","deadlines":{"c":"2026-12-02T15:20:29Z"}}]}`,
		`{"type":"error","code":"E"}`,
		`{"type":"future"}`, `{`, `null`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, err := clientwire.ReadGatewayFrame(data)
		if err != nil {
			require.Equal(t, clientwire.CodeBadFrame, holdover.CodeOf(err))
			require.Nil(t, fr)
			return
		}
		switch fr := fr.(type) {
		case nil:
		case clientwire.ViewFrame:
			require.NotEmpty(t, fr.ID)
			require.True(t, json.Valid(fr.View))
		case clientwire.StreamFrame:
			require.NotEmpty(t, fr.ID)
		case clientwire.ErrorFrame:
			require.NotEmpty(t, fr.Code)
		}
	})
}

// The wire is for both sides of the WebSocket: a Client that imports it
// pulls in none of the worker's core (waiter, worker, projection). Of the
// module it needs the root package only, directly or not.
func TestImportsNothingOfTheWorkersCore(t *testing.T) {
	const module = "github.com/holdover-dev/holdover"
	seen := map[string]bool{}
	var walk func(path string)
	walk = func(path string) {
		if seen[path] {
			return
		}
		seen[path] = true
		pkg, err := build.Import(path, ".", 0)
		require.NoError(t, err)
		for _, imp := range pkg.Imports {
			if imp == module || strings.HasPrefix(imp, module+"/") {
				walk(imp)
			}
		}
	}
	walk(module + "/clientwire")
	delete(seen, module+"/clientwire")
	assert.Equal(t, map[string]bool{module: true}, seen)
}
