package main

import (
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// holdover answer is listed, refuses command lines it cannot run with
// exit 2, and shows a failure's stable code first with exit 1, so a
// script can read it from stderr.
func TestAnswerCommandLine(t *testing.T) {
	code, _, stderr := cli(t, "help")
	assert.Equal(t, 0, code)
	assert.Contains(t, stderr, "answer   list a Session's open and continued questions")

	for _, args := range [][]string{
		{"answer"},
		{"answer", "s1", "s2"},
		{"answer", "--answer", "q=1", "s1"},
		{"answer", "--call", "c1", "--json", `{"answers":[]}`, "--skip", "q", "s1"},
		{"answer", "--list", "--call", "c1", "s1"},
		{"answer", "--no-such-flag", "s1"},
	} {
		code, _, stderr := cli(t, args...)
		assert.Equal(t, 2, code, "%q: %s", args, stderr)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	down := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close())
	code, _, stderr = cli(t, "answer", "--gateway", down, "--token", "t", "--list", "s1")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "holdover answer: UNAVAILABLE: cannot reach the gateway at "+down)

	code, _, stderr = cli(t, "answer", "--gateway", "127.0.0.1:8080", "--list", "s1")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "holdover answer: BAD_REQUEST: gateway address")
}
