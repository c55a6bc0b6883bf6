package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/logcheck"
	"github.com/holdover-dev/holdover/schemas"
	"github.com/holdover-dev/holdover/wiredoc"
)

// agentProtocol is the runtime author's document, whose every example
// this test runs.
var agentProtocol = filepath.Join("..", "docs", "agent-protocol.md")

// Every example of docs/agent-protocol.md is checked against the code:
// each wire transcript is played, in document order, on one connection to
// a real embedded server running a question worker (the userQuestions
// service and a projection worker), and every message the system sends
// must be the one the document shows, modulo the placeholders for what
// the system chooses; each JSON example names its schema and must fit it.
// A doc edit that drifts from the code, or code that drifts from the doc,
// fails here (issue 8).
func TestAgentProtocolExamples(t *testing.T) {
	doc, err := os.ReadFile(agentProtocol)
	require.NoError(t, err)
	blocks, err := wiredoc.Blocks(doc)
	require.NoError(t, err)

	w := newAnswerWorld(t)
	w.worker()
	r := wiredoc.NewRunner(w.conn())
	t.Cleanup(r.Close)

	ran := 0
	for _, b := range blocks {
		kind, arg, _ := strings.Cut(b.Info, " ")
		switch kind {
		case "wire":
			steps, err := wiredoc.Steps(b)
			require.NoError(t, err)
			if err := r.Run(steps); err != nil {
				t.Fatalf("%s %v", agentProtocol, err)
			}
			ran++
		case "json":
			require.NotEmpty(t, arg, "%s:%d: a JSON example names the schema it fits (```json <schema file>)", agentProtocol, b.Line)
			problems, err := schemas.Validate(arg, []byte(b.Text))
			require.NoError(t, err, "%s:%d", agentProtocol, b.Line)
			require.Empty(t, problems, "%s:%d: the example does not fit %s", agentProtocol, b.Line, arg)
		case "check":
			// What `holdover check <sid>` prints for the Session's log.
			log, err := w.log.ReadStored(context.Background(), arg, 0)
			require.NoError(t, err)
			report, err := logcheck.Check(log)
			require.NoError(t, err)
			var lines []string
			for _, p := range report.Problems {
				lines = append(lines, p.String())
			}
			require.Equal(t, strings.TrimSpace(b.Text), strings.Join(lines, "\n"), "%s:%d: holdover check %s", agentProtocol, b.Line, arg)
		default:
			t.Fatalf("%s:%d: a block %q is checked by nothing: make it a wire transcript or a JSON example naming its schema", agentProtocol, b.Line, b.Info)
		}
	}
	require.NotZero(t, ran, "the document has wire examples")
}
