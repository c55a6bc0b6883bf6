package integration

import (
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

	"github.com/holdover-dev/holdover/events"
)

// The question scenarios of issue 5's "Must show", each in a real browser
// against the whole system. Names cite the SPEC rules they show.

// askDB is one timed question with described options, the first
// pre-selected as recommended (P2: a pre-selection is not an edit).
func askDB(timeout int) string {
	return fmt.Sprintf(`call ask_user_question {"questions":[{"id":"db","header":"Storage","question":"Which database should the service use?",`+
		`"detail":"The service stores **sessions** and *drafts*. See [the notes](https://example.test/notes).",`+
		`"options":[{"label":"Postgres (Recommended)","description":"Durable and shared; needs a server"},{"label":"SQLite","description":"One file, no server"}]}],"timeout":%d}`, timeout)
}

// askTwo is a timed call with two questions: a single-select and a multi-select one.
func askTwo(timeout int) string {
	return fmt.Sprintf(`call ask_user_question {"questions":[`+
		`{"id":"db","header":"Storage","question":"Which database?","options":[{"label":"Postgres"},{"label":"SQLite"}]},`+
		`{"id":"extras","header":"Extras","question":"Which extras?","multiSelect":true,"options":[{"label":"Metrics","description":"Prometheus /metrics"},{"label":"Tracing"}]}`+
		`],"timeout":%d}`, timeout)
}

const (
	sayMovedOn   = "say Moving on with the work that does not depend on the answer."
	onLateAnswer = "on late answer say Thanks, applying your late answer."
	card         = "section.card"
	cardNotice   = card + " .notice"
	countdown    = card + " .countdown"
)

// text is the JavaScript text of the first element at css inside the card.
func text(css string) string { return jsQuery(css) + `?.textContent` }

// expandAll unfolds every Turn and process group until pred holds (JavaScript).
func expandAll(pred string) string {
	return `(() => { document.querySelectorAll('.disclosure[aria-expanded="false"]').forEach((b) => b.click()); return ` + pred + `; })()`
}

func TestBrowserTimedCardExpiresToWorkContinuedThenALateAnswerRendersOneReply(t *testing.T) {
	// P1, W5, C3, C4, P5, G1–G3.
	w := newBrowserWorld(t, strings.Join([]string{askDB(3), sayMovedOn, onLateAnswer}, "\n"))
	const sid = "s-expire"
	w.start(sid, "Set up the service")
	p := w.open(sid, "user", false)

	p.waitFor("a counting card", text(countdown)+`?.startsWith("Continuing in")`)
	first := p.str(text(countdown))
	p.shot("counting")
	p.waitFor("the countdown to move", text(countdown)+` !== `+jsString(first)+` && `+text(countdown)+`?.startsWith("Continuing in")`)

	p.waitFor("expiry", text(cardNotice)+` === "Work continued — you can still answer"`)
	p.waitFor("the late-answer channel", jsQuery(card+`[data-channel="rpc"]`)+` !== null`)
	p.waitFor("the row to say the answer is still available", jsQuery(`.question-row[data-state="continued"]`)+` !== null`)
	p.shot("work-continued")

	p.click(card + ` .option:nth-of-type(2)`) // SQLite
	p.click(card + ` .submit`)
	p.waitFor("the panel to close after the accepted RPC", jsQuery(card)+` === null`)

	p.waitFor("one reply node", expandAll(`document.querySelectorAll(".row.reply").length === 1`))
	p.waitFor("the row's View answers", text(`.question-row .row-action`)+` === "View answers"`)
	require.Equal(t, 1, p.count(`.row.reply`), "G2: the reply renders once")
	require.Zero(t, p.countText(`.row.user`, "answer_to_pending_question"), "G2: never also as an ordinary user message")
	require.Contains(t, p.str(text(`.row.reply .reply-summary`)), "SQLite")
	// G3: the reply opened a Turn; that Turn's disclosure comes before the group holding the reply.
	require.Equal(t, "turn-toggle", p.str(`[...`+jsQuery(`.row.reply`)+`.closest(".turn").children].find((c) => c.matches("button"))?.classList[1]`))
	var order []string
	p.eval(`[...`+jsQuery(`.row.reply`)+`.closest(".turn").querySelectorAll(".turn-toggle, .group-toggle, .row.reply")].map((e) => e.classList.contains("row") ? "reply" : e.classList[1])`, &order)
	require.Equal(t, []string{"turn-toggle", "group-toggle", "reply"}, order)

	p.click(`.question-row .row-action`)
	p.waitFor("the recorded answers", text(`.question-row .answers`)+`?.includes("SQLite")`)
	p.click(`.row.reply .expand`)
	p.waitFor("the expanded reply", text(`.row.reply .answers`)+`?.includes("Which database should the service use?")`)
	p.shot("reply-and-row")

	evts := w.awaitTypes(sid, events.TypeTurnEnd, 2)
	replies := 0
	for _, e := range evts {
		if m, ok := e.Body.(*events.UserMessage); ok && m.Message.Source.IsQuestionReply() {
			replies++
		}
	}
	require.Equal(t, 1, replies, "one late reply was admitted")
}

// seconds reads the whole seconds of a countdown label ("Continuing in 12s", "Paused · 12s remaining").
func seconds(t *testing.T, label string) int {
	t.Helper()
	m := secondsRE.FindStringSubmatch(label)
	require.NotNil(t, m, "no seconds in %q", label)
	n, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	return n
}

var secondsRE = regexp.MustCompile(`(\d+)s`)

func TestBrowserFocusPausesAndBlurResumesTheCountdown(t *testing.T) {
	// P1: manual focus on a pristine answer surface pauses; blur resumes the preserved remainder.
	w := newBrowserWorld(t, strings.Join([]string{askDB(30), sayMovedOn}, "\n"))
	const sid = "s-focus"
	w.start(sid, "Set up the service")
	p := w.open(sid, "user", false)
	p.waitFor("a counting card", text(countdown)+`?.startsWith("Continuing in")`)

	p.do(chromedp.Focus(chromedp.CSS(card + ` .option:nth-of-type(2) input`)))
	p.waitFor("the pause", jsQuery(card+`[data-phase="paused"]`)+` !== null && `+text(countdown)+`?.startsWith("Paused · ")`)
	paused := p.str(text(countdown))
	p.waitFor("the live region to announce the pause once", text(card+` [role="status"]`)+`?.startsWith("Countdown paused with")`)
	p.shot("paused")
	time.Sleep(1500 * time.Millisecond) // long enough for a running countdown to show another second
	require.Equal(t, paused, p.str(text(countdown)), "a paused countdown keeps its remainder")
	require.Equal(t, "Postgres (Recommended)", p.str(`document.querySelector('`+card+` input:checked')?.value`), "focus is not an edit")

	p.do(chromedp.Blur(chromedp.CSS(card + ` .option:nth-of-type(2) input`)))
	p.waitFor("the countdown to resume", jsQuery(card+`[data-phase="running"]`)+` !== null && `+text(countdown)+`?.startsWith("Continuing in")`)
	resumed := seconds(t, p.str(text(countdown)))
	require.LessOrEqual(t, resumed, seconds(t, paused), "blur resumes from the preserved remainder")
	require.GreaterOrEqual(t, resumed, seconds(t, paused)-1, "the pause held the remainder")
	p.waitFor("it to count on", text(countdown)+` !== `+jsString(p.str(text(countdown))))
	p.shot("resumed")
}

func TestBrowserTakeTimeThenAnswerAfterTheHostDeadlineSettlesThroughTheWaterfall(t *testing.T) {
	// P2, W2, W4: Take time freezes the local countdown; the claim keeps the Host timer off, so an
	// answer after the original deadline still settles the foreground call (M7), not pending.
	w := newBrowserWorld(t, strings.Join([]string{askDB(3), sayMovedOn}, "\n"))
	const sid = "s-take-time"
	w.start(sid, "Set up the service")
	p := w.open(sid, "user", false)
	p.waitFor("a counting card", text(countdown)+`?.startsWith("Continuing in")`)
	p.click(card + ` .take-time`)
	p.waitFor("the frozen countdown", text(countdown)+` === "Waiting until you answer"`)
	p.shot("taking-time")

	call := w.askCall(sid)
	time.Sleep(time.Until(call.At.Add(3*time.Second + 700*time.Millisecond))) // past the Host's original deadline
	require.Nil(t, resultOf(w.events(sid), call.ID), "the claim holds the Host deadline")
	require.Equal(t, "Waiting until you answer", p.str(text(countdown)))

	p.click(card + ` .option:nth-of-type(2)`)
	p.click(card + ` .submit`)
	p.waitFor("the card to go once the projection settles", jsQuery(card)+` === null`)
	p.waitFor("the answered row", expandAll(text(`.question-row .state-label`)+` === "1/1 answered"`))
	p.shot("answered")
	res := w.awaitResult(sid, call.ID)
	require.JSONEq(t, `{"answers":[{"id":"db","selected":["SQLite"]}]}`, events.JoinText(res.Content), "an in-time answer, not pending")
}

func TestBrowserReloadMidDraftRestoresAnswersAndDisposition(t *testing.T) {
	// P2, C1: keyboard only — arrow keys choose, Enter advances, Space toggles; a reload keeps it all.
	w := newBrowserWorld(t, strings.Join([]string{askTwo(60), sayMovedOn}, "\n"))
	const sid = "s-reload"
	w.start(sid, "Set up the service")
	p := w.open(sid, "user", false)
	p.waitFor("a counting card", text(countdown)+`?.startsWith("Continuing in")`)

	p.do(chromedp.Focus(chromedp.CSS(card+` .option:nth-of-type(1) input`)), chromedp.KeyEvent(kb.ArrowDown))
	p.waitFor("SQLite chosen by keyboard", `document.querySelector('`+card+` input:checked')?.value === "SQLite"`)
	p.waitFor("the edit to freeze the countdown", text(countdown)+` === "Waiting until you answer"`)
	p.do(chromedp.KeyEvent(kb.Enter))
	p.waitFor("Enter to advance", jsQuery(card+` .question[data-question-id="extras"]`)+` !== null`)
	p.waitFor("focus to follow", `document.activeElement?.value === "Metrics"`)
	p.do(chromedp.KeyEvent(kb.Tab), chromedp.KeyEvent(" "))
	p.waitFor("Tracing toggled by keyboard", `document.querySelector('`+card+` input[value="Tracing"]')?.checked === true`)
	p.keys(card+` textarea`, "and logs")
	p.waitFor("the text", `document.querySelector('`+card+` textarea')?.value === "and logs"`)
	p.shot("draft")

	p.do(chromedp.Reload())
	p.waitFor("the page to reconnect", `document.getElementById("status")?.textContent === "Connected"`)
	p.waitFor("the restored page", jsQuery(card+`[data-channel="waterfall"] .question[data-question-id="extras"]`)+` !== null`)
	require.True(t, p.bool(`document.querySelector('`+card+` input[value="Tracing"]')?.checked`))
	require.False(t, p.bool(`document.querySelector('`+card+` input[value="Metrics"]')?.checked`))
	require.Equal(t, "and logs", p.str(`document.querySelector('`+card+` textarea')?.value`))
	require.Equal(t, "Waiting until you answer", p.str(text(countdown)), "the disposition survives the reload")
	p.shot("restored")
	p.click(card + ` .back`)
	p.waitFor("page one's restored choice", `document.querySelector('`+card+` input:checked')?.value === "SQLite"`)

	p.click(card + ` .next`)
	p.click(card + ` .submit`)
	p.waitFor("the answered row", expandAll(text(`.question-row .state-label`)+` === "2/2 answered"`))
	res := w.awaitResult(sid, w.askCall(sid).ID)
	require.JSONEq(t, `{"answers":[{"id":"db","selected":["SQLite"]},{"id":"extras","selected":["Tracing"],"custom":"and logs"}]}`, events.JoinText(res.Content))
}

func TestBrowserHidingATimedPanelKeepsTheCountdownAndTheRowReopensIt(t *testing.T) {
	// P4, D9: hiding sends nothing; the claim and countdown run on; the tool row shows the panel again.
	w := newBrowserWorld(t, strings.Join([]string{askDB(30), sayMovedOn}, "\n"))
	const sid = "s-hide"
	w.start(sid, "Set up the service")
	p := w.open(sid, "user", false)
	p.waitFor("a counting card", text(countdown)+`?.startsWith("Continuing in")`)
	before := seconds(t, p.str(text(countdown)))

	p.click(card + ` .hide`)
	p.waitFor("the panel to hide", jsQuery(card)+` === null`)
	rowCountdown := `.question-row .countdown`
	p.waitFor("the row's countdown", text(rowCountdown)+`?.startsWith("Continuing in")`)
	p.waitFor("the row's action", text(`.question-row .action-show`)+` === "Show question"`)
	p.waitFor("the countdown to keep running while hidden", `(() => { const m = /(\d+)s/.exec(`+text(rowCountdown)+` ?? ""); return m && Number(m[1]) < `+strconv.Itoa(before)+`; })()`)
	p.shot("hidden")
	require.Nil(t, resultOf(w.events(sid), w.askCall(sid).ID), "hiding records nothing")

	p.click(`.question-row .action-show`)
	p.waitFor("the panel again, still counting", jsQuery(card+`[data-phase="running"]`)+` !== null`)
	require.Less(t, seconds(t, p.str(text(countdown))), before)
	p.shot("reopened")
}

func TestBrowserAWaterfallAnswerThatLosesToTheDeadlineShowsTheResubmitHintAndTheResubmitLands(t *testing.T) {
	// C4, W8, §7: Take time holds one Client only. The other Client's countdown wins the
	// foreground request while this Client's answer is still on its way; the card re-arms with the
	// resubmit hint and the retained draft goes through the late-answer RPC.
	w := newBrowserWorld(t, strings.Join([]string{askDB(6), sayMovedOn, onLateAnswer}, "\n"))
	const sid = "s-resubmit"
	w.start(sid, "Set up the service")
	a := w.open(sid, "a", true)
	b := w.open(sid, "b", true)
	a.waitFor("a counting card", text(countdown)+`?.startsWith("Continuing in")`)
	b.waitFor("a counting card", text(countdown)+`?.startsWith("Continuing in")`)

	a.click(card + ` .take-time`)
	a.click(card + ` .option:nth-of-type(2)`)
	a.holdSettles()
	a.click(card + ` .submit`)
	a.waitFor("the busy card", jsQuery(card+`[aria-busy="true"]`)+` !== null`)
	a.shot("answer-in-flight")

	b.waitFor("b's countdown to win", text(cardNotice)+` === "Work continued — you can still answer"`)
	a.waitFor("the resubmit hint", text(card+` .hint`)+` === "The answer did not arrive before work continued; submit it again."`)
	a.waitFor("the late-answer channel", jsQuery(card+`[data-channel="rpc"]`)+` !== null`)
	require.Equal(t, "SQLite", a.str(`document.querySelector('`+card+` input:checked')?.value`), "the draft is retained")
	a.shot("resubmit-hint")
	a.releaseSettles() // arrives after the request ended: the Host discards it (W8)

	a.click(card + ` .submit`)
	a.waitFor("the panel to close after the accepted RPC", jsQuery(card)+` === null`)
	a.waitFor("the reply node", expandAll(`document.querySelectorAll(".row.reply").length === 1`))
	a.waitFor("the answered row", expandAll(text(`.question-row .state-label`)+` === "1/1 answered"`))
	a.shot("resubmitted")
	b.waitFor("b's card to close once the reply settled the question", jsQuery(card)+` === null`)

	call := w.askCall(sid)
	res := w.awaitResult(sid, call.ID)
	require.Contains(t, events.JoinText(res.Content), `"pending":true`, "the deadline won the foreground request")
	w.await(sid, "the admitted late reply", func(evts []events.Event) bool { return lateReply(evts, call.ID) != nil })
	require.JSONEq(t, `[{"id":"db","selected":["SQLite"]}]`, string(mustJSON(t, lateReply(w.events(sid), call.ID).Answers)))
}

func TestBrowserTwoClientsOneAnswersAndTheOthersCardCloses(t *testing.T) {
	// C1, C5, W8: one card per (Session, call) in each Client; the projection closes the other's.
	w := newBrowserWorld(t, strings.Join([]string{askDB(30), sayMovedOn}, "\n"))
	const sid = "s-two"
	w.start(sid, "Set up the service")
	a := w.open(sid, "a", true)
	b := w.open(sid, "b", true)
	a.waitFor("a counting card", text(countdown)+`?.startsWith("Continuing in")`)
	b.waitFor("a counting card", text(countdown)+`?.startsWith("Continuing in")`)
	b.click(card + ` .option:nth-of-type(1)`) // b starts a draft of its own
	b.shot("both-open")

	a.click(card + ` .option:nth-of-type(2)`)
	a.click(card + ` .submit`)
	a.waitFor("a's card to go", jsQuery(card)+` === null`)
	b.waitFor("b's card to close", jsQuery(card)+` === null`)
	b.waitFor("b's row to show the answer", expandAll(text(`.question-row .state-label`)+` === "1/1 answered"`))
	b.shot("closed-elsewhere")
	var drafts int
	b.eval(`Object.keys(localStorage).filter((k) => k.startsWith("holdover.draft.")).length`, &drafts)
	require.Zero(t, drafts, "C5: removal clears the draft")
}

func TestBrowserGatewayRestartKeepsCardsAndDrafts(t *testing.T) {
	// Reconnecting (docs/protocol.md): the Client keeps cards and drafts, watches again from its
	// last seq, and the in-flight request arrives again; the answer still settles in the foreground.
	w := newBrowserWorld(t, strings.Join([]string{askTwo(60), sayMovedOn}, "\n"))
	const sid = "s-restart"
	w.start(sid, "Set up the service")
	p := w.open(sid, "user", false)
	p.waitFor("a counting card", text(countdown)+`?.startsWith("Continuing in")`)
	p.click(card + ` .option:nth-of-type(2)`)
	p.keys(card+` textarea`, "with WAL")
	p.waitFor("the draft", `document.querySelector('`+card+` textarea')?.value === "with WAL"`)

	w.gw.kill()
	p.waitFor("the Client to notice", `document.getElementById("status")?.textContent.includes("econnecting")`)
	p.waitFor("the card to stay, without a channel", jsQuery(card+`[data-channel="none"]`)+` !== null`)
	require.Equal(t, "SQLite", p.str(`document.querySelector('`+card+` input:checked')?.value`))
	p.shot("gateway-down")

	w.gw.start()
	p.waitFor("the Client to reconnect", `document.getElementById("status")?.textContent === "Connected"`)
	p.waitFor("the request again", jsQuery(card+`[data-channel="waterfall"]`)+` !== null`)
	require.Equal(t, "SQLite", p.str(`document.querySelector('`+card+` input:checked')?.value`))
	require.Equal(t, "with WAL", p.str(`document.querySelector('`+card+` textarea')?.value`))
	require.Equal(t, "Waiting until you answer", p.str(text(countdown)))
	p.shot("reconnected")

	p.click(card + ` .next`)
	p.click(card + ` .skip`)
	p.click(card + ` .submit`)
	p.waitFor("the answered row", expandAll(text(`.question-row .state-label`)+` === "1/2 answered"`))
	res := w.awaitResult(sid, w.askCall(sid).ID)
	require.JSONEq(t, `{"answers":[{"id":"db","selected":["SQLite"],"custom":"with WAL"},{"id":"extras","selected":[]}]}`, events.JoinText(res.Content))
}

func TestBrowserQueuedReplyRowShowsViewAnswersBeforeAndAfterReload(t *testing.T) {
	// P5, D8: while the agent is busy, the late reply waits in its inbox; the row shows the
	// submitted answers behind View answers, also after a reload; admission then renders the reply.
	w := newBrowserWorld(t, strings.Join([]string{askDB(2), "work 1 step of 10m", sayMovedOn, onLateAnswer}, "\n"))
	const sid = "s-queued"
	w.start(sid, "Set up the service")
	p := w.open(sid, "user", false)
	p.waitFor("the late-answer channel", jsQuery(card+`[data-channel="rpc"]`)+` !== null`)
	w.working(sid)

	p.click(card + ` .option:nth-of-type(2)`)
	p.click(card + ` .submit`)
	p.waitFor("the panel to close", jsQuery(card)+` === null`)
	viewQueued := func(state string) {
		p.waitFor("the queued row", jsQuery(`.question-row[data-state="queued"] .action-view-answers`)+` !== null`)
		require.Equal(t, "View answers", p.str(text(`.question-row .row-action`)))
		p.click(`.question-row .action-view-answers`)
		p.waitFor("the submitted answers", text(`.question-row .answers`)+`?.includes("SQLite")`)
		require.Zero(t, p.count(`.row.reply`), "not admitted yet")
		p.shot(state)
	}
	viewQueued("queued")

	p.do(chromedp.Reload())
	p.waitFor("the page to reconnect", `document.getElementById("status")?.textContent === "Connected"`)
	viewQueued("queued-after-reload")

	w.clock.Advance(10 * time.Minute) // the agent's independent work ends; the next step admits the reply
	p.waitFor("the reply node", expandAll(`document.querySelectorAll(".row.reply").length === 1`))
	p.waitFor("the answered row", expandAll(text(`.question-row .state-label`)+` === "1/1 answered"`))
	p.shot("admitted")
}

// askedCall is an ask_user_question call as the Session log recorded it.
type askedCall struct {
	ID string
	At time.Time
}

// askCall is the Session's ask_user_question tool call, once recorded.
func (w *browserWorld) askCall(sid string) askedCall {
	w.t.Helper()
	for _, e := range w.awaitTypes(sid, events.TypeToolCall, 1) {
		if c, ok := e.Body.(*events.ToolCall); ok && c.Name == "ask_user_question" {
			return askedCall{ID: c.CallID, At: e.At}
		}
	}
	w.t.Fatalf("no ask_user_question call in %s", sid)
	return askedCall{}
}

// awaitResult waits for the tool result of callID.
func (w *browserWorld) awaitResult(sid, callID string) *events.ToolResult {
	w.t.Helper()
	evts := w.await(sid, "the result of "+callID, func(evts []events.Event) bool { return resultOf(evts, callID) != nil })
	return resultOf(evts, callID)
}

func resultOf(evts []events.Event, callID string) *events.ToolResult {
	for _, e := range evts {
		if r, ok := e.Body.(*events.ToolResult); ok && r.CallID == callID {
			return r
		}
	}
	return nil
}

// lateReply is the admitted late reply to callID, parsed, or nil.
func lateReply(evts []events.Event, callID string) *events.Reply {
	for _, e := range evts {
		if m, ok := e.Body.(*events.UserMessage); ok && m.Message.Source.IsQuestionReply() && m.Message.Source.CallID == callID {
			if r, err := events.ParseReply(events.JoinText(m.Message.Content)); err == nil {
				return &r
			}
		}
	}
	return nil
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}
