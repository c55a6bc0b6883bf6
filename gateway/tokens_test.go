package gateway

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
)

func TestTokensGrantTheirSessions(t *testing.T) {
	tokens, err := ParseTokens([]byte(`{"tokens": {
		"t-ana": {"user": "ana", "sessions": ["s1", "s2"]},
		"t-bo":  {"user": "bo",  "sessions": ["*"]}
	}}`))
	require.NoError(t, err)

	ana, ok := tokens.Lookup("t-ana")
	require.True(t, ok)
	assert.Equal(t, "ana", ana.User)
	assert.True(t, ana.Allows("s1"))
	assert.True(t, ana.Allows("s2"))
	assert.False(t, ana.Allows("s3"))
	assert.False(t, ana.Allows(AllSessions), "a list of Sessions is not every Session")

	bo, ok := tokens.Lookup("t-bo")
	require.True(t, ok)
	assert.True(t, bo.Allows("anything"))

	for _, guess := range []string{"", "t-an", "t-ana ", "T-ANA", "t-bo\x00"} {
		_, ok := tokens.Lookup(guess)
		assert.False(t, ok, "%q", guess)
	}
	var none *Tokens
	_, ok = none.Lookup("t-ana")
	assert.False(t, ok)
}

// A token file with a mistake fails at start, with BAD_REQUEST, instead
// of locking someone out later.
func TestTokensRefuseBadConfiguration(t *testing.T) {
	for name, data := range map[string]string{
		"not JSON":         `tokens`,
		"unknown field":    `{"tokens": {"t": {"user": "ana", "session": ["s1"]}}}`,
		"no user":          `{"tokens": {"t": {"sessions": ["s1"]}}}`,
		"no sessions":      `{"tokens": {"t": {"user": "ana", "sessions": []}}}`,
		"bad session":      `{"tokens": {"t": {"user": "ana", "sessions": ["s.1"]}}}`,
		"wildcard pattern": `{"tokens": {"t": {"user": "ana", "sessions": ["s*"]}}}`,
		"empty token":      `{"tokens": {"": {"user": "ana", "sessions": ["s1"]}}}`,
		"trailing data":    `{"tokens": {}} {}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseTokens([]byte(data))
			require.Error(t, err)
			assert.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err))
		})
	}
}

func TestLoadTokensNamesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"tokens": {"t": {"user": "ana"}}}`), 0o600))
	_, err := LoadTokens(path)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "tokens.json")
	assert.Contains(t, err.Error(), "lists no Sessions")

	_, err = LoadTokens(filepath.Join(t.TempDir(), "missing.json"))
	assert.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err))
}
