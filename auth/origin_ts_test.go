package auth_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/streams"
)

// The TypeScript runtime checks the origin of the requests it answers by
// the same rule (auth.CheckOrigin): the table it reads is made from
// roles.go, and the cases its test runs carry this side's verdicts, so a
// changed permission or a changed rule fails here until both are written
// again with HOLDOVER_UPDATE_DOCS=1 go test -run TestTypeScriptOrigins ./auth.
const (
	tsPermissions = "../sdk/typescript/src/generated/permissions.ts"
	tsOriginCases = "../sdk/typescript/test/origin-cases.json"
)

func TestTypeScriptOrigins(t *testing.T) {
	for file, want := range map[string]string{tsPermissions: tsPermissionsFile(), tsOriginCases: originCasesFile(t)} {
		if os.Getenv("HOLDOVER_UPDATE_DOCS") != "" {
			require.NoError(t, os.WriteFile(file, []byte(want), 0o644))
		}
		have, err := os.ReadFile(file)
		require.NoError(t, err)
		require.Equal(t, want, string(have), "%s is out of date: HOLDOVER_UPDATE_DOCS=1 go test -run TestTypeScriptOrigins ./auth", file)
	}
}

func tsPermissionsFile() string {
	var b strings.Builder
	b.WriteString(`// Generated from auth/roles.go by ` + "`HOLDOVER_UPDATE_DOCS=1 go test -run TestTypeScriptOrigins ./auth`" + `; do not edit.
// What each role may publish: a subject an allow pattern matches and no deny
// pattern does (docs/permissions.md), as origin.ts reads it.

export const publishRights: Readonly<Record<string, { readonly allow: readonly string[]; readonly deny: readonly string[] }>> = {
`)
	list := func(rules []auth.Rule) string {
		if len(rules) == 0 {
			return "[]"
		}
		var b strings.Builder
		b.WriteString("[\n")
		for _, r := range rules {
			fmt.Fprintf(&b, "      %s,\n", strconv.Quote(r.Subject))
		}
		return b.String() + "    ]"
	}
	for _, r := range auth.Roles {
		p := auth.Of(r)
		fmt.Fprintf(&b, "  %s: {\n    allow: %s,\n    deny: %s,\n  },\n", r, list(p.Pub), list(p.DenyPub))
	}
	b.WriteString("};\n")
	return b.String()
}

// originCase is one request the TypeScript test checks: its subject, its
// reply subject, and whether auth.CheckOrigin serves it.
type originCase struct {
	Subject string `json:"subject"`
	Reply   string `json:"reply"`
	Serve   bool   `json:"serve"`
}

// originCasesFile is every role's inbox, no role's, no inbox and no reply
// at all, against the subjects a runtime serves and a few it does not.
func originCasesFile(t *testing.T) string {
	discard, err := streams.SessionSubject("s1", streams.DiscardSuffix)
	require.NoError(t, err)
	replies := []string{"", "$JS.ACK.SESSIONS.c.1.1.1.1.0", "holdover.session.s2.inbox.call_1", "$KV.userQuestions.s2", "_INBOX", "_INBOX.", "_INBOX.abc123.1", "_INBOXES.gateway.1"}
	for _, r := range auth.Roles {
		replies = append(replies, r.InboxPrefix()+".aBc.1", r.InboxPrefix())
	}
	var cases []originCase
	for _, subject := range []string{streams.ResumeSubject, discard, "holdover.q.answer", "holdover.q.askTimed", "holdover.q.wait.lease~worker~w1.abort"} {
		for _, reply := range replies {
			cases = append(cases, originCase{subject, reply, auth.CheckOrigin(subject, reply) == nil})
		}
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	require.NoError(t, enc.Encode(cases))
	return b.String()
}
