package auth_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/auth"
)

// permissionsDoc is the page that lists every role's permissions with
// their reasons, made from the table in roles.go.
const permissionsDoc = "../docs/permissions.md"

// The page an operator reads is the table the server enforces: a changed
// permission fails this test until the page is written again with
// HOLDOVER_UPDATE_DOCS=1 go test -run TestPermissionsDoc ./auth.
func TestPermissionsDoc(t *testing.T) {
	want := permissionsPage()
	if os.Getenv("HOLDOVER_UPDATE_DOCS") != "" {
		require.NoError(t, os.WriteFile(permissionsDoc, []byte(want), 0o644))
	}
	have, err := os.ReadFile(permissionsDoc)
	require.NoError(t, err)
	require.Equal(t, want, string(have), "docs/permissions.md is out of date: HOLDOVER_UPDATE_DOCS=1 go test -run TestPermissionsDoc ./auth")
}

func permissionsPage() string {
	var b strings.Builder
	b.WriteString(`# NATS permissions by role

Generated from ` + "`auth/roles.go`" + ` (` + "`HOLDOVER_UPDATE_DOCS=1 go test -run TestPermissionsDoc ./auth`" + `);
the design is in ` + "`docs/design.md`" + `, "Least privilege on NATS". Each role's user JWT
carries exactly these subjects. A subject is allowed when an allow rule
matches it and no deny rule does. Every role's connections use the inbox
prefix ` + "`_INBOX.<role>`" + `.

`)
	section := func(title string, rules []auth.Rule) {
		if len(rules) == 0 {
			return
		}
		fmt.Fprintf(&b, "%s:\n\n| subject | why |\n|---|---|\n", title)
		for _, r := range rules {
			fmt.Fprintf(&b, "| `%s` | %s |\n", r.Subject, r.Why)
		}
		b.WriteString("\n")
	}
	for _, r := range auth.Roles {
		p := auth.Of(r)
		fmt.Fprintf(&b, "## %s\n\n", r)
		section("Publish", p.Pub)
		section("Publish, denied", p.DenyPub)
		section("Subscribe", p.Sub)
		if p.Replies != "" {
			fmt.Fprintf(&b, "Replies: one to each request it receives, within %v, on the request's reply subject: %s.\n\n", auth.ReplyWindow, p.Replies)
		}
	}
	return b.String()
}
