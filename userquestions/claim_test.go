package userquestions

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	leases "github.com/holdover-dev/holdover/lease"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/waiter"
)

// A claim's consumer name carries its Session and call, whatever the call
// id holds, because advisories name only the consumer.
func TestClaimNamesCarryTheirWait(t *testing.T) {
	for _, call := range []string{"call-1", "toolu_01ABC", "a.b", "*", ">", "x y", "~", "=abc", "ünï"} {
		name, subject, err := NewClaimName("s-1_A", call)
		require.NoError(t, err, call)
		assert.NotContains(t, name, ".", "a consumer name never holds a dot")
		key, ok := ParseClaim(name)
		require.True(t, ok, name)
		assert.Equal(t, waiter.Key{Session: "s-1_A", CallID: call}, key)
		got, ok := FrameSubject(name)
		require.True(t, ok)
		assert.Equal(t, subject, got)
		assert.True(t, strings.HasPrefix(subject, streams.ClaimPrefix+"."), subject)
	}
}

func TestClaimNamesRefuseWhatCannotBeNamed(t *testing.T) {
	for _, tc := range []struct{ sid, call string }{
		{"a.b", "c"}, {"", "c"}, {"s", ""},
		{strings.Repeat("s", 128), strings.Repeat("ü", 64)}, // fine apart, too long together
	} {
		_, _, err := NewClaimName(tc.sid, tc.call)
		assert.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err), "%q %q", tc.sid, tc.call)
	}
}

func TestLeasesAndForeignConsumersAreNotClaims(t *testing.T) {
	for _, name := range []string{
		leases.Name(RoleWorker, "abc"), leases.Name(RoleCaller, "abc"),
		"claim~s~c", "claim~s~c~id~extra", "claim~a*b~c~id", "claim~s~=!!~id", "other~s~c~id", "", "KV_userQuestions",
	} {
		_, ok := ParseClaim(name)
		assert.False(t, ok, name)
		_, ok = FrameSubject(name)
		assert.False(t, ok, name)
	}
}

// FuzzClaimName: every name NewClaimName makes parses back to its wait.
func FuzzClaimName(f *testing.F) {
	for _, seed := range [][2]string{{"s1", "call-1"}, {"s-1_A", "a.b~c"}, {"x", "=abc"}, {"x", "ünï *>"}} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, sid, call string) {
		name, subject, err := NewClaimName(sid, call)
		if err != nil {
			require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err))
			return
		}
		key, ok := ParseClaim(name)
		require.True(t, ok, name)
		require.Equal(t, waiter.Key{Session: sid, CallID: call}, key)
		got, ok := FrameSubject(name)
		require.True(t, ok)
		require.Equal(t, subject, got)
		require.LessOrEqual(t, len(name), MaxClaimNameLen)
	})
}

// FuzzParseClaim: advisory subjects come from the network; no name makes
// the parser panic, and what it accepts names a checked Session.
func FuzzParseClaim(f *testing.F) {
	for _, seed := range []string{"claim~s~c~id", "claim~s~=YS5i~id", "lease~worker~x", "claim~~~", "~~~~", "claim~s~=~id"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, name string) {
		key, ok := ParseClaim(name)
		if !ok {
			return
		}
		require.NoError(t, streams.CheckSession(key.Session))
		require.NotEmpty(t, key.CallID)
		_, ok = FrameSubject(name)
		require.True(t, ok)
	})
}
