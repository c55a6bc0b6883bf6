package integration

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/events"
)

// browserDemo is the script of `holdover dev`'s demo agent, with its
// question's timeout set to seconds so the pending path does not take the
// demo's 30 s.
func browserDemo(t *testing.T, seconds int) string {
	t.Helper()
	script, err := os.ReadFile("../cmd/holdover/demo.script")
	require.NoError(t, err)
	require.Contains(t, string(script), " timeout 30\n")
	return strings.Replace(string(script), " timeout 30\n", fmt.Sprintf(" timeout %d\n", seconds), 1)
}

// browserTranscriptSays is true once the transcript, unfolded, contains text.
func browserTranscriptSays(text string) string {
	return browserExpandAll(browserText(`.transcript`) + `?.includes(` + browserString(text) + `)`)
}

// browserAnswerDemo answers the demo's two questions on its card: the recommended database, and eu.
func browserAnswerDemo(p *browserPage) {
	p.click(browserCard + ` .next`)
	p.click(browserCard + ` .option:nth-of-type(1)`) // eu
	p.click(browserCard + ` .submit`)
}

const (
	demoStillOpen = "The question is still open. Meanwhile I wrote the parts that do not depend on the database."
	demoAnswers   = "db=PostgreSQL (Recommended); region=eu"
)

func TestBrowserDemoAnsweredInTimeSaysSo(t *testing.T) {
	// Issue 13 item 7, path 1: answer the demo in time and the agent says it got the answer, not
	// that the question is still open.
	t.Parallel()
	const sid = "demo"
	w, p := browserAsking(t, sid, browserDemo(t, 60))
	p.waitFor("the demo's card", browserText(browserCountdown)+`?.startsWith("Continuing in")`)
	browserAnswerDemo(p)
	p.waitFor("the agent's thanks", browserTranscriptSays("Thanks: you answered in time ("+demoAnswers+"). Wiring up the storage layer with it now."))
	require.False(t, p.bool(browserTranscriptSays(demoStillOpen)), "nothing says the question is still open")
	res := w.awaitResult(sid, w.askCall(sid))
	require.NotContains(t, events.JoinText(res.Content), `"pending"`)
	p.shot("answered-in-time")

	// Issue 13 item 8: the read-only answers, as the tool row shows them.
	p.waitFor("the recorded answers", browserExpandAll(`(document.querySelector(".question-row .row-action[aria-expanded='false']")?.click(), `+
		browserText(`.question-row .answers`)+`?.includes("PostgreSQL"))`))
	p.accessible("read-only answers")
	p.shot("read-only-answers")
}

func TestBrowserDemoPendingThenALateAnswerSaysEach(t *testing.T) {
	// Issue 13 item 7, paths 2 and 3: the wait ends unanswered, the agent works on and says the
	// question is still open; the answer then comes late and the agent thanks for it.
	t.Parallel()
	const sid = "demo"
	w, p := browserAsking(t, sid, browserDemo(t, 2))
	p.waitFor("the card to continue", browserQuery(browserCard+`[data-channel="rpc"]`)+` !== null`)
	for range 3 { // work 3 steps of 2s, on the agent's clock
		w.working(sid)
		w.clock.Advance(2 * time.Second)
	}
	p.waitFor("the agent to say the question is still open", browserTranscriptSays(demoStillOpen))
	require.False(t, p.bool(browserTranscriptSays("answered in time")))
	p.shot("pending")

	browserAnswerDemo(p)
	p.waitFor("the agent's thanks for the late answer", browserTranscriptSays("Thanks: you answered "+demoAnswers+" for "+w.askCall(sid)+". Wiring up the storage layer with it now."))
	p.shot("late-answer")
}
