package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/liveroot"
	"github.com/holdover-dev/holdover/projection"
)

// The question scenarios of issue 5's "Must show", each in a real browser
// against the whole system. Names cite the SPEC rules they show.

// browserAskDB is one timed question with described options, the first
// pre-selected as recommended (P2: a pre-selection is not an edit).
func browserAskDB(timeout int) string {
	return fmt.Sprintf(`call ask_user_question {"questions":[{"id":"db","header":"Storage","question":"Which database should the service use?",`+
		`"detail":"The service stores **sessions** and *drafts*. See [the notes](https://example.test/notes).",`+
		`"options":[{"label":"Postgres (Recommended)","description":"Durable and shared; needs a server"},{"label":"SQLite","description":"One file, no server"}]}],"timeout":%d}`, timeout)
}

// browserAskTwo is a timed call with two questions: a single-select and a multi-select one.
func browserAskTwo(timeout int) string {
	return fmt.Sprintf(`call ask_user_question {"questions":[`+
		`{"id":"db","header":"Storage","question":"Which database?","options":[{"label":"Postgres"},{"label":"SQLite"}]},`+
		`{"id":"extras","header":"Extras","question":"Which extras?","multiSelect":true,"options":[{"label":"Metrics","description":"Prometheus /metrics"},{"label":"Tracing"}]}`+
		`],"timeout":%d}`, timeout)
}

const (
	browserSayMovedOn   = "say Moving on with the work that does not depend on the answer."
	browserOnLateAnswer = "on late answer say Thanks, applying your late answer."
	browserCard         = "section.card"
	browserNotice       = browserCard + " .notice"
	browserCountdown    = browserCard + " .countdown"
)

// browserText is the JavaScript text of the first element at css.
func browserText(css string) string { return browserQuery(css) + `?.textContent` }

// browserExpandAll unfolds every Turn and process group until pred holds (JavaScript).
func browserExpandAll(pred string) string {
	return `(() => { document.querySelectorAll('.disclosure[aria-expanded="false"]').forEach((b) => b.click()); return ` + pred + `; })()`
}

func TestBrowserSessionWithoutQuestionsIsLiveAndEmptyThenShowsTheFirstQuestion(t *testing.T) {
	// C1: a Session with no projection entry yet reads as an empty, working page, not as
	// loading; the page says "Live" only once its watch is (docs/protocol.md, ready).
	w := newBrowserWorld(t, browserAskDB(60))
	const sid = "s-empty"
	p := w.open(sid, "user", false) // waits for "Live"
	p.waitFor("the empty page", browserText(`.crumbs .facts`)+` === "0 events · no questions yet"`)
	require.Equal(t, "No events in this Session yet.", p.str(browserText(`.transcript .hint`)))
	p.shot("empty-session")

	w.start(w.ctx, sid, "Set up the service")
	p.waitFor("the first question", browserText(browserCountdown)+`?.startsWith("Continuing in")`)
	p.waitFor("the facts to follow", `!`+browserText(`.crumbs .facts`)+`.includes("no questions yet")`)
	p.shot("first-question")
}

func TestBrowserTimedCardExpiresToWorkContinuedThenALateAnswerRendersOneReply(t *testing.T) {
	// P1, W5, C3, C4, P5, G1–G3.
	const sid = "s-expire"
	w, p := browserAsking(t, sid, browserAskDB(3), browserSayMovedOn, browserOnLateAnswer)

	p.waitFor("a counting card", browserText(browserCountdown)+`?.startsWith("Continuing in")`)
	first := p.str(browserText(browserCountdown))
	// Roles a screen reader needs: a labelled region, a radio group named by its question, and a
	// polite live region for the countdown whose text does not tick.
	require.Equal(t, "The agent asks", p.str(`document.getElementById(`+browserQuery(browserCard+`[role="region"]`)+`.getAttribute("aria-labelledby")).textContent`))
	require.Equal(t, "Which database should the service use?", p.str(`document.getElementById(`+browserQuery(browserCard+` [role="radiogroup"]`)+`.getAttribute("aria-labelledby")).textContent`))
	require.Equal(t, "polite", p.str(browserQuery(browserCard+` [role="status"]`)+`.getAttribute("aria-live")`))
	require.Equal(t, "true", p.str(browserQuery(browserCountdown)+`.getAttribute("aria-hidden")`))
	p.shot("counting")
	p.waitFor("the countdown to move", browserText(browserCountdown)+` !== `+browserString(first)+` && `+browserText(browserCountdown)+`?.startsWith("Continuing in")`)

	p.waitFor("expiry", browserText(browserNotice)+` === "Work continued — you can still answer"`)
	p.waitFor("the late-answer channel", browserQuery(browserCard+`[data-channel="rpc"]`)+` !== null`)
	p.waitFor("the row to say the answer is still available", browserQuery(`.question-row[data-state="continued"]`)+` !== null`)
	p.shot("work-continued")

	p.click(browserCard + ` .option:nth-of-type(2)`) // SQLite
	p.click(browserCard + ` .submit`)
	p.waitFor("the panel to close after the accepted RPC", browserQuery(browserCard)+` === null`)

	p.waitFor("one reply node", browserExpandAll(`document.querySelectorAll(".row.reply").length === 1`))
	p.waitFor("the row's View answers", browserExpandAll(browserText(`.question-row .row-action`)+` === "View answers"`))
	require.Equal(t, 1, p.count(`.row.reply`), "G2: the reply renders once")
	require.Zero(t, p.countText(`.row.user`, "answer_to_pending_question"), "G2: never also as an ordinary user message")
	require.Contains(t, p.str(browserText(`.row.reply .reply-summary`)), "SQLite")
	// G3: the reply opened a Turn; that Turn's disclosure comes before the group holding the reply.
	require.Equal(t, "turn-toggle", p.str(`[...`+browserQuery(`.row.reply`)+`.closest(".turn").children].find((c) => c.matches("button"))?.classList[1]`))
	var order []string
	p.eval(`[...`+browserQuery(`.row.reply`)+`.closest(".turn").querySelectorAll(".turn-toggle, .group-toggle, .row.reply")].map((e) => e.classList.contains("row") ? "reply" : e.classList[1])`, &order)
	require.Equal(t, []string{"turn-toggle", "group-toggle", "reply"}, order)

	p.click(`.question-row .row-action`)
	p.waitFor("the recorded answers", browserText(`.question-row .answers`)+`?.includes("SQLite")`)
	p.click(`.row.reply .expand`)
	p.waitFor("the expanded reply", browserText(`.row.reply .answers`)+`?.includes("Which database should the service use?")`)
	p.shot("reply-and-row")

	evts := w.AwaitCount(sid, events.TypeTurnEnd, 2)
	replies := 0
	for _, e := range evts {
		if m, ok := e.Body.(*events.UserMessage); ok && m.Message.Source.IsQuestionReply() {
			replies++
		}
	}
	require.Equal(t, 1, replies, "one late reply was admitted")
}

// browserSeconds reads the whole seconds of a countdown label ("Continuing in 12s", "Paused · 12s remaining").
func browserSeconds(t *testing.T, label string) int {
	t.Helper()
	m := browserSecondsRE.FindStringSubmatch(label)
	require.NotNil(t, m, "no seconds in %q", label)
	n, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	return n
}

var browserSecondsRE = regexp.MustCompile(`(\d+)s`)

func TestBrowserFocusPausesAndBlurResumesTheCountdown(t *testing.T) {
	// P1: manual focus on a pristine answer surface pauses; blur resumes the preserved remainder.
	const sid = "s-focus"
	_, p := browserAsking(t, sid, browserAskDB(30), browserSayMovedOn)
	p.waitFor("a counting card", browserText(browserCountdown)+`?.startsWith("Continuing in")`)

	p.do(chromedp.Focus(chromedp.CSS(browserCard + ` .option:nth-of-type(2) input`)))
	p.waitFor("the pause", browserQuery(browserCard+`[data-phase="paused"]`)+` !== null && `+browserText(browserCountdown)+`?.startsWith("Paused · ")`)
	paused := p.str(browserText(browserCountdown))
	p.waitFor("the live region to announce the pause once", browserText(browserCard+` [role="status"]`)+`?.startsWith("Countdown paused with")`)
	p.shot("paused")
	time.Sleep(4 * time.Second) // a running countdown would lose four seconds meanwhile
	require.Equal(t, paused, p.str(browserText(browserCountdown)), "a paused countdown keeps its remainder")
	require.Equal(t, "Postgres (Recommended)", p.str(`document.querySelector('`+browserCard+` input:checked')?.value`), "focus is not an edit")

	p.do(chromedp.Blur(chromedp.CSS(browserCard + ` .option:nth-of-type(2) input`)))
	p.waitFor("the countdown to resume", browserQuery(browserCard+`[data-phase="running"]`)+` !== null && `+browserText(browserCountdown)+`?.startsWith("Continuing in")`)
	resumed := browserSeconds(t, p.str(browserText(browserCountdown)))
	require.LessOrEqual(t, resumed, browserSeconds(t, paused), "blur resumes from the preserved remainder")
	require.GreaterOrEqual(t, resumed, browserSeconds(t, paused)-2, "the pause held the remainder")
	p.waitFor("it to count on", browserText(browserCountdown)+` !== `+browserString(p.str(browserText(browserCountdown))))
	p.shot("resumed")
}

func TestBrowserTakeTimeThenAnswerAfterTheHostDeadlineSettlesThroughTheWaterfall(t *testing.T) {
	// P2, W2, W4: Take time freezes the local countdown; the claim keeps the Host timer off, so an
	// answer after the original deadline still settles the foreground call (M7), not pending.
	const sid = "s-take-time"
	w, p := browserAsking(t, sid, browserAskDB(3), browserSayMovedOn)
	p.waitFor("a counting card", browserText(browserCountdown)+`?.startsWith("Continuing in")`)
	// The call started before its card showed, so the Host's original deadline is at most 3 s from now.
	deadline := time.Now().Add(3 * time.Second)
	p.click(browserCard + ` .take-time`)
	p.waitFor("the frozen countdown", browserText(browserCountdown)+` === "Waiting until you answer"`)
	p.shot("taking-time")

	call := w.askCall(sid)
	time.Sleep(time.Until(deadline.Add(time.Second))) // well past the Host's original deadline
	require.Nil(t, browserResultOf(w.Events(sid), call), "the claim holds the Host deadline")
	require.Equal(t, "Waiting until you answer", p.str(browserText(browserCountdown)))

	p.click(browserCard + ` .option:nth-of-type(2)`)
	p.click(browserCard + ` .submit`)
	p.waitFor("the card to go once the projection settles", browserQuery(browserCard)+` === null`)
	p.waitFor("the answered row", browserExpandAll(browserText(`.question-row .state-label`)+` === "1/1 answered"`))
	p.shot("answered")
	res := w.awaitResult(sid, call)
	require.JSONEq(t, `{"answers":[{"id":"db","selected":["SQLite"]}]}`, events.JoinText(res.Content), "an in-time answer, not pending")
}

func TestBrowserReloadMidDraftRestoresAnswersAndDisposition(t *testing.T) {
	// P2, C1: keyboard only — arrow keys choose, Enter advances, Space toggles; a reload keeps it all.
	const sid = "s-reload"
	w, p := browserAsking(t, sid, browserAskTwo(60), browserSayMovedOn)
	p.waitFor("a counting card", browserText(browserCountdown)+`?.startsWith("Continuing in")`)

	p.do(chromedp.Focus(chromedp.CSS(browserCard+` .option:nth-of-type(1) input`)), chromedp.KeyEvent(kb.ArrowDown))
	p.waitFor("SQLite chosen by keyboard", `document.querySelector('`+browserCard+` input:checked')?.value === "SQLite"`)
	p.waitFor("the edit to freeze the countdown", browserText(browserCountdown)+` === "Waiting until you answer"`)
	p.do(chromedp.KeyEvent(kb.Enter))
	p.waitFor("Enter to advance", browserQuery(browserCard+` .question[data-question-id="extras"]`)+` !== null`)
	p.waitFor("focus to follow", `document.activeElement?.value === "Metrics"`)
	p.do(chromedp.KeyEvent(kb.Tab), chromedp.KeyEvent(" "))
	p.waitFor("Tracing toggled by keyboard", `document.querySelector('`+browserCard+` input[value="Tracing"]')?.checked === true`)
	p.keys(browserCard+` textarea`, "and logs")
	p.waitFor("the text", `document.querySelector('`+browserCard+` textarea')?.value === "and logs"`)
	p.shot("draft")

	p.do(chromedp.Reload())
	p.waitFor("the page to reconnect", browserLive)
	p.waitFor("the restored page", browserQuery(browserCard+`[data-channel="waterfall"] .question[data-question-id="extras"]`)+` !== null`)
	require.True(t, p.bool(`document.querySelector('`+browserCard+` input[value="Tracing"]')?.checked`))
	require.False(t, p.bool(`document.querySelector('`+browserCard+` input[value="Metrics"]')?.checked`))
	require.Equal(t, "and logs", p.str(`document.querySelector('`+browserCard+` textarea')?.value`))
	require.Equal(t, "Waiting until you answer", p.str(browserText(browserCountdown)), "the disposition survives the reload")
	p.shot("restored")
	p.click(browserCard + ` .back`)
	p.waitFor("page one's restored choice", `document.querySelector('`+browserCard+` input:checked')?.value === "SQLite"`)

	p.click(browserCard + ` .next`)
	p.click(browserCard + ` .submit`)
	p.waitFor("the answered row", browserExpandAll(browserText(`.question-row .state-label`)+` === "2/2 answered"`))
	res := w.awaitResult(sid, w.askCall(sid))
	require.JSONEq(t, `{"answers":[{"id":"db","selected":["SQLite"]},{"id":"extras","selected":["Tracing"],"custom":"and logs"}]}`, events.JoinText(res.Content))
}

func TestBrowserHidingATimedPanelKeepsTheCountdownAndTheRowReopensIt(t *testing.T) {
	// P4, D9: hiding sends nothing; the claim and countdown run on; the tool row shows the panel again.
	const sid = "s-hide"
	w, p := browserAsking(t, sid, browserAskDB(30), browserSayMovedOn)
	p.waitFor("a counting card", browserText(browserCountdown)+`?.startsWith("Continuing in")`)
	before := browserSeconds(t, p.str(browserText(browserCountdown)))

	p.click(browserCard + ` .hide`)
	p.waitFor("the panel to hide", browserQuery(browserCard)+` === null`)
	rowCountdown := `.question-row .countdown`
	p.waitFor("the row's countdown", browserText(rowCountdown)+`?.startsWith("Continuing in")`)
	p.waitFor("the row's action", browserText(`.question-row .action-show`)+` === "Show question"`)
	p.waitFor("the countdown to keep running while hidden", `(() => { const m = /(\d+)s/.exec(`+browserText(rowCountdown)+` ?? ""); return m && Number(m[1]) < `+strconv.Itoa(before)+`; })()`)
	p.shot("hidden")
	require.Nil(t, browserResultOf(w.Events(sid), w.askCall(sid)), "hiding records nothing")

	p.click(`.question-row .action-show`)
	p.waitFor("the panel again, still counting", browserQuery(browserCard+`[data-phase="running"]`)+` !== null`)
	require.Less(t, browserSeconds(t, p.str(browserText(browserCountdown))), before)
	p.shot("reopened")
}

func TestBrowserAWaterfallAnswerThatLosesToTheDeadlineShowsTheResubmitHintAndTheResubmitLands(t *testing.T) {
	// C4, W8, §7: Take time holds one Client only. The other Client's countdown wins the
	// foreground request while this Client's answer is still on its way; the card re-arms with the
	// resubmit hint and the retained draft goes through the late-answer RPC.
	w := newBrowserWorld(t, strings.Join([]string{browserAskDB(6), browserSayMovedOn, browserOnLateAnswer}, "\n"))
	const sid = "s-resubmit"
	a := w.open(sid, "a", true)
	b := w.open(sid, "b", true)
	w.start(w.ctx, sid, "Set up the service")
	a.waitFor("a counting card", browserText(browserCountdown)+`?.startsWith("Continuing in")`)
	b.waitFor("a counting card", browserText(browserCountdown)+`?.startsWith("Continuing in")`)

	a.click(browserCard + ` .take-time`)
	a.click(browserCard + ` .option:nth-of-type(2)`)
	a.holdSettles()
	a.click(browserCard + ` .submit`)
	a.waitFor("the busy card", browserQuery(browserCard+`[aria-busy="true"]`)+` !== null`)
	a.shot("answer-in-flight")

	b.waitFor("b's countdown to win", browserText(browserNotice)+` === "Work continued — you can still answer"`)
	a.waitFor("the resubmit hint", browserText(browserCard+` .hint`)+` === "The answer did not arrive before work continued; submit it again."`)
	a.waitFor("the late-answer channel", browserQuery(browserCard+`[data-channel="rpc"]`)+` !== null`)
	require.Equal(t, "SQLite", a.str(`document.querySelector('`+browserCard+` input:checked')?.value`), "the draft is retained")
	a.shot("resubmit-hint")
	a.releaseSettles() // arrives after the request ended: the Host discards it (W8)

	a.click(browserCard + ` .submit`)
	a.waitFor("the panel to close after the accepted RPC", browserQuery(browserCard)+` === null`)
	a.waitFor("the reply node", browserExpandAll(`document.querySelectorAll(".row.reply").length === 1`))
	a.waitFor("the answered row", browserExpandAll(browserText(`.question-row .state-label`)+` === "1/1 answered"`))
	a.shot("resubmitted")
	b.waitFor("b's card to close once the reply settled the question", browserQuery(browserCard)+` === null`)

	call := w.askCall(sid)
	res := w.awaitResult(sid, call)
	require.Contains(t, events.JoinText(res.Content), `"pending":true`, "the deadline won the foreground request")
	w.Await(sid, "the admitted late reply", func(evts []events.Event) bool { return browserLateReply(evts, call) != nil })
	require.JSONEq(t, `[{"id":"db","selected":["SQLite"]}]`, string(browserJSON(t, browserLateReply(w.Events(sid), call).Answers)))
}

func TestBrowserTwoClientsOneAnswersAndTheOthersCardCloses(t *testing.T) {
	// C1, C5, W8: one card per (Session, call) in each Client; the projection closes the other's.
	w := newBrowserWorld(t, strings.Join([]string{browserAskDB(30), browserSayMovedOn}, "\n"))
	const sid = "s-two"
	a := w.open(sid, "a", true)
	b := w.open(sid, "b", true)
	w.start(w.ctx, sid, "Set up the service")
	a.waitFor("a counting card", browserText(browserCountdown)+`?.startsWith("Continuing in")`)
	b.waitFor("a counting card", browserText(browserCountdown)+`?.startsWith("Continuing in")`)
	b.click(browserCard + ` .option:nth-of-type(1)`) // b starts a draft of its own
	b.shot("both-open")

	a.click(browserCard + ` .option:nth-of-type(2)`)
	a.click(browserCard + ` .submit`)
	a.waitFor("a's card to go", browserQuery(browserCard)+` === null`)
	b.waitFor("b's card to close", browserQuery(browserCard)+` === null`)
	b.waitFor("b's row to show the answer", browserExpandAll(browserText(`.question-row .state-label`)+` === "1/1 answered"`))
	b.shot("closed-elsewhere")
	var drafts int
	b.eval(`Object.keys(localStorage).filter((k) => k.startsWith("holdover.draft.")).length`, &drafts)
	require.Zero(t, drafts, "C5: removal clears the draft")
}

func TestBrowserGatewayRestartKeepsCardsAndDrafts(t *testing.T) {
	// Reconnecting (docs/protocol.md): the Client keeps cards and drafts, watches again from its
	// last seq, and the in-flight request arrives again; the answer still settles in the foreground.
	const sid = "s-restart"
	w, p := browserAsking(t, sid, browserAskTwo(60), browserSayMovedOn)
	p.waitFor("a counting card", browserText(browserCountdown)+`?.startsWith("Continuing in")`)
	p.click(browserCard + ` .option:nth-of-type(2)`)
	p.keys(browserCard+` textarea`, "with WAL")
	p.waitFor("the draft", `document.querySelector('`+browserCard+` textarea')?.value === "with WAL"`)

	w.gw.kill()
	p.waitFor("the Client to notice", `["waiting", "connecting"].includes(document.getElementById("status")?.dataset.state) && /^(Disconnected · reconnecting in \d+s|Reconnecting…)$/.test(document.getElementById("status")?.textContent)`)
	p.waitFor("the card to stay, without a channel", browserQuery(browserCard+`[data-channel="none"]`)+` !== null`)
	require.Equal(t, "SQLite", p.str(`document.querySelector('`+browserCard+` input:checked')?.value`))
	p.shot("gateway-down")

	w.gw.start()
	p.waitFor("the Client to reconnect", browserLive)
	p.waitFor("the request again", browserQuery(browserCard+`[data-channel="waterfall"]`)+` !== null`)
	require.Equal(t, "SQLite", p.str(`document.querySelector('`+browserCard+` input:checked')?.value`))
	require.Equal(t, "with WAL", p.str(`document.querySelector('`+browserCard+` textarea')?.value`))
	require.Equal(t, "Waiting until you answer", p.str(browserText(browserCountdown)))
	p.shot("reconnected")

	p.click(browserCard + ` .next`)
	p.click(browserCard + ` .skip`)
	p.click(browserCard + ` .submit`)
	p.waitFor("the answered row", browserExpandAll(browserText(`.question-row .state-label`)+` === "1/2 answered"`))
	res := w.awaitResult(sid, w.askCall(sid))
	require.JSONEq(t, `{"answers":[{"id":"db","selected":["SQLite"],"custom":"with WAL"},{"id":"extras","selected":[]}]}`, events.JoinText(res.Content))
}

func TestBrowserQueuedReplyRowShowsViewAnswersBeforeAndAfterReload(t *testing.T) {
	// P5, D8: while the agent is busy, the late reply waits in its inbox; the row shows the
	// submitted answers behind View answers, also after a reload; admission then renders the reply.
	w, p := browserQueueReply(t, "s-queued")
	viewQueued := func(state string) {
		p.waitFor("the queued row", browserQuery(`.question-row[data-state="queued"] .action-view-answers`)+` !== null`)
		require.Equal(t, "View answers", p.str(browserText(`.question-row .row-action`)))
		p.click(`.question-row .action-view-answers`)
		p.waitFor("the submitted answers", browserText(`.question-row .answers`)+`?.includes("SQLite")`)
		require.Zero(t, p.count(`.row.reply`), "not admitted yet")
		p.shot(state)
	}
	viewQueued("queued")

	p.do(chromedp.Reload())
	p.waitFor("the page to reconnect", browserLive)
	viewQueued("queued-after-reload")

	w.clock.Advance(10 * time.Minute) // the agent's independent work ends; the next step admits the reply
	p.waitFor("the reply node", browserExpandAll(`document.querySelectorAll(".row.reply").length === 1`))
	p.waitFor("the answered row", browserExpandAll(browserText(`.question-row .state-label`)+` === "1/1 answered"`))
	p.shot("admitted")
}

// browserAsking runs an agent with script in Session sid, with a page that
// watches the Session before the agent asks.
func browserAsking(t *testing.T, sid string, script ...string) (*browserWorld, *browserPage) {
	t.Helper()
	w := newBrowserWorld(t, strings.Join(script, "\n"))
	p := w.open(sid, "user", false)
	w.start(w.ctx, sid, "Set up the service")
	return w, p
}

// browserQueueReply runs an agent in Session sid that asks a 2 s question
// and then works for 10 minutes of its clock; the page lets the question
// expire and answers SQLite through the RPC, so the reply waits in the
// agent's inbox (D8) until the test advances the clock.
func browserQueueReply(t *testing.T, sid string) (*browserWorld, *browserPage) {
	t.Helper()
	w, p := browserAsking(t, sid, browserAskDB(2), "work 1 step of 10m", browserSayMovedOn, browserOnLateAnswer)
	p.waitFor("the late-answer channel", browserQuery(browserCard+`[data-channel="rpc"]`)+` !== null`)
	w.working(sid)
	p.click(browserCard + ` .option:nth-of-type(2)`) // SQLite
	p.click(browserCard + ` .submit`)
	p.waitFor("the panel to close", browserQuery(browserCard)+` === null`)
	return w, p
}

// askCall is the call id of the Session's ask_user_question tool call, once recorded.
func (w *browserWorld) askCall(sid string) string {
	w.t.Helper()
	for _, e := range w.AwaitCount(sid, events.TypeToolCall, 1) {
		if c, ok := e.Body.(*events.ToolCall); ok && c.Name == "ask_user_question" {
			return c.CallID
		}
	}
	w.t.Fatalf("no ask_user_question call in %s", sid)
	return ""
}

// awaitResult waits for the tool result of callID.
func (w *browserWorld) awaitResult(sid, callID string) *events.ToolResult {
	w.t.Helper()
	evts := w.Await(sid, "the result of "+callID, func(evts []events.Event) bool { return browserResultOf(evts, callID) != nil })
	return browserResultOf(evts, callID)
}

func browserResultOf(evts []events.Event, callID string) *events.ToolResult {
	for _, e := range evts {
		if r, ok := e.Body.(*events.ToolResult); ok && r.CallID == callID {
			return r
		}
	}
	return nil
}

// browserLateReply is the admitted late reply to callID, parsed, or nil.
func browserLateReply(evts []events.Event, callID string) *events.Reply {
	for _, e := range evts {
		if m, ok := e.Body.(*events.UserMessage); ok && m.Message.Source.IsQuestionReply() && m.Message.Source.CallID == callID {
			if r, err := events.ParseReply(events.JoinText(m.Message.Content)); err == nil {
				return &r
			}
		}
	}
	return nil
}

func browserJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

func TestBrowserAReplyNoAgentHasReadShowsQueued(t *testing.T) {
	// D7, D8, issue 24: the agent stopped after its question went pending, so the late reply
	// is stored and no runtime reads it: the projection shows the call continued, the service's
	// view shows the reply queued, and so does the row, also after a reload. A pool member then
	// resumes the Session and admits it.
	const sid = "s-stored"
	w := newBrowserWorld(t, strings.Join([]string{browserAskDB(2), browserSayMovedOn, browserOnLateAnswer}, "\n"))
	p := w.open(sid, "user", false)
	ctx, stop := context.WithCancel(w.ctx)
	w.start(ctx, sid, "Set up the service")
	p.waitFor("the late-answer channel", browserQuery(browserCard+`[data-channel="rpc"]`)+` !== null`)
	w.AwaitCount(sid, events.TypeTurnEnd, 1)
	stop()
	roots := liveroot.New(w.env.Topology.Roots)
	require.Eventually(t, func() bool {
		_, live, err := roots.Lookup(w.ctx, sid)
		return err == nil && !live
	}, agentPatience, 10*time.Millisecond, "the stopped agent released the Session")

	p.click(browserCard + ` .option:nth-of-type(2)`) // SQLite
	p.click(browserCard + ` .submit`)
	p.waitFor("the panel to close", browserQuery(browserCard)+` === null`)
	viewQueued := func(state string) {
		p.waitFor("the queued row", browserQuery(`.question-row[data-state="queued"] .action-view-answers`)+` !== null`)
		p.click(`.question-row .action-view-answers`)
		p.waitFor("the submitted answers", browserText(`.question-row .answers`)+`?.includes("SQLite")`)
		p.shot(state)
	}
	viewQueued("stored-queued")
	for _, e := range w.Events(sid) {
		if m, ok := e.Body.(*events.InboxSpliced); ok {
			require.False(t, m.Message.Source.IsQuestionReply(), "an agent read the reply")
		}
	}
	require.Equal(t, projection.Continued, w.projected(sid).Active[0].Status, "the projection shows no reply")

	p.do(chromedp.Reload())
	p.waitFor("the page to reconnect", browserLive)
	viewQueued("stored-queued-after-reload")

	rt := w.runtime("runtime-pool")
	t.Cleanup(func() { require.NoError(t, rt.Close()) })
	leave, err := rt.ServePool(w.ctx)
	require.NoError(t, err)
	t.Cleanup(leave)
	p.waitFor("the reply node", browserExpandAll(`document.querySelectorAll(".row.reply").length === 1`))
	p.waitFor("the answered row", browserExpandAll(browserText(`.question-row .state-label`)+` === "1/1 answered"`))
	p.shot("stored-admitted")
}

func TestBrowserPlanReviewApprovesAndAnUnkeyedCardDismissedIsCancelled(t *testing.T) {
	// M8: the plan panel (Markdown detail, Approve, Request changes). C2: an unkeyed blocking
	// request has its own card; "Dismiss all questions" rejects it with ASK_CANCELLED.
	w := newBrowserWorld(t, browserSayMovedOn)
	const sid = "s-plan"
	p := w.open(sid, "user", false)
	plan := holdover.Question{
		ID: "plan", Question: "Approve this migration plan?",
		Detail:  "# Migration plan\n1. Add the **sessions** table\n2. Backfill it\n   - in batches of `1000`\n3. Switch reads\n\n```sql\nALTER TABLE sessions ADD COLUMN draft jsonb;\n```\n\n<script>alert(1)</script>",
		Options: []holdover.Option{{Label: "Approve"}, {Label: "Revise"}},
	}
	type asked struct {
		answers []holdover.Answer
		err     error
	}
	// A legacy ask fails NO_PROVIDER while no answerer watches the Session
	// (W6); a live page's watch follows the Session's requests, so it never
	// does here.
	asker := w.asker()
	ask := func(req holdover.AskRequest) <-chan asked {
		done := make(chan asked, 1)
		go func() {
			answers, err := asker.Ask(w.ctx, req)
			done <- asked{answers, err}
		}()
		return done
	}

	review := ask(holdover.AskRequest{Session: sid, Questions: []holdover.Question{plan}, Intent: &holdover.Intent{Kind: holdover.IntentPlanReview, Approve: "Approve"}})
	p.waitFor("the plan panel", browserQuery(browserCard+`.plan-card .plan-body h3`)+` !== null`)
	require.Zero(t, p.count(browserCard+` script`), "the plan's HTML is escaped, never run")
	require.Contains(t, p.str(browserText(browserCard+` .plan-body`)), "<script>alert(1)</script>")
	p.shot("plan")
	p.click(browserCard + ` .request-changes`)
	p.click(browserCard + ` .send-changes`)
	p.waitFor("the validation message", browserText(browserCard+` .validation`)+` === "Say what should change before sending."`)
	p.keys(browserCard+` textarea`, "Backfill in smaller batches")
	p.shot("request-changes")
	p.click(browserCard + ` .back`)
	p.click(browserCard + ` .approve`)
	got := <-review
	require.NoError(t, got.err)
	require.Equal(t, []holdover.Answer{{ID: "plan", Selected: []string{"Approve"}}}, got.answers)
	p.waitFor("the panel to end with its request", browserQuery(browserCard)+` === null`)

	dismissed := ask(holdover.AskRequest{Session: sid, Questions: []holdover.Question{{ID: "go", Question: "Proceed with the deploy?", Options: []holdover.Option{{Label: "Yes"}, {Label: "No"}}}}})
	p.waitFor("the unkeyed card", browserQuery(browserCard+` .dismiss-all`)+` !== null`)
	p.shot("unkeyed")
	p.click(browserCard + ` .dismiss-all`)
	got = <-dismissed
	require.Equal(t, holdover.CodeAskCancelled, holdover.CodeOf(got.err), "closing an unkeyed panel rejects with ASK_CANCELLED: %v", got.err)
	p.waitFor("the card to end", browserQuery(browserCard)+` === null`)

	p.click(`.crumbs a[href="#/"]`)
	p.waitFor("the Session list", browserText(`.sessions li .id`)+` === "s-plan"`)
	p.shot("session-list")
}

func TestBrowserDiscardingAQueuedReplyRestoresTheAnswerAction(t *testing.T) {
	// P5, C4, D8, §7: a queued late reply can be taken back before admission; the row then
	// offers the answer again, and a new answer is queued and admitted as usual.
	const sid = "s-discard"
	w, p := browserQueueReply(t, sid)
	p.waitFor("the queued row", browserQuery(`.question-row[data-state="queued"] .action-discard`)+` !== null`)
	require.Equal(t, "Discard reply", p.str(browserText(`.question-row .action-discard`)))
	p.shot("queued-discardable")
	p.click(`.question-row .action-discard`)
	p.waitFor("the answer action again", browserQuery(`.question-row[data-state="continued"] .action-answer`)+` !== null`)
	require.Zero(t, p.count(`.question-row .action-discard`))
	w.AwaitCount(sid, events.TypeInboxDiscarded, 1) // the agent recorded the discard (D8)
	p.shot("discarded")

	p.click(`.question-row .action-answer`)
	p.waitFor("the card again, answerable", browserQuery(browserCard+`[data-channel="rpc"] .submit:not([disabled])`)+` !== null`)
	p.click(browserCard + ` .option:nth-of-type(1)`) // Postgres
	p.click(browserCard + ` .submit`)
	p.waitFor("queued again", browserQuery(`.question-row[data-state="queued"]`)+` !== null`)

	w.clock.Advance(10 * time.Minute) // the next step admits the second reply
	p.waitFor("the reply node", browserExpandAll(`document.querySelectorAll(".row.reply").length === 1`))
	p.waitFor("the answered row", browserExpandAll(browserText(`.question-row .state-label`)+` === "1/1 answered"`))
	// The ended Turn may fold again on the next render: unfold and open the answers on each look.
	p.waitFor("the recorded answer", browserExpandAll(`(document.querySelector(".question-row .action-view[aria-expanded='false']")?.click(), `+
		browserText(`.question-row .answers`)+`?.includes("Postgres"))`))
	p.shot("answered-after-discard")
}
