package integration

import (
	"context"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/events"
)

// cdpCall runs one protocol command in the page, as chromedp's own actions do.
func cdpCall[P any, R any](cmd cdp.Command[P, R], params P) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, cmd, params)
		return err
	})
}

func TestBrowserKeyboardAnswersACardWithNumberKeysEnterAndShiftEnterAndAnIMENeverSubmits(t *testing.T) {
	// Issue 13 item 4: 1–9 pick options (toggle in multi-select), Enter goes to the next question
	// and submits on the last, Shift+Enter is a new line in free text, an input method's Enter
	// never submits, and the card says so in one line. Every key is a real key event (CDP Input).
	t.Parallel()
	const sid = "s-keys"
	w, p := browserAsking(t, sid, browserAskTwo(60), browserSayMovedOn)
	p.waitFor("a counting card", browserText(browserCountdown)+`?.startsWith("Continuing in")`)
	require.Equal(t, "1–2 choose · Enter next · Shift+Enter new line · Esc hide", p.str(browserText(browserCard+` .keys-hint`)))

	p.do(chromedp.Focus(chromedp.CSS(browserCard + ` .option:nth-of-type(1) input`)))
	p.do(chromedp.KeyEvent("2"))
	p.waitFor("2 to choose SQLite", `document.querySelector('`+browserCard+` input:checked')?.value === "SQLite"`)
	p.do(chromedp.KeyEvent("1"))
	p.waitFor("1 to choose Postgres", `document.querySelector('`+browserCard+` input:checked')?.value === "Postgres"`)
	p.do(chromedp.KeyEvent(kb.Enter))
	p.waitFor("Enter to go to the next question", browserQuery(browserCard+` .question[data-question-id="extras"]`)+` !== null`)
	require.Equal(t, "1–2 toggle · Enter submit · Shift+Enter new line · Esc hide", p.str(browserText(browserCard+` .keys-hint`)))

	p.do(chromedp.KeyEvent("1"), chromedp.KeyEvent("2"), chromedp.KeyEvent("1"))
	p.waitFor("1, 2, 1 to leave Tracing alone checked", `[...document.querySelectorAll('`+browserCard+` input:checked')].map((i) => i.value).join() === "Tracing"`)

	p.do(chromedp.Focus(chromedp.CSS(browserCard + ` textarea`)))
	p.do(chromedp.KeyEvent("1"), chromedp.KeyEvent(kb.Enter, chromedp.KeyModifiers(chromedp.ModifierShift)), chromedp.KeyEvent("2"))
	p.waitFor("a digit typed as text and Shift+Enter as a new line", `document.querySelector('`+browserCard+` textarea')?.value === "1\n2"`)
	require.Equal(t, "Tracing", p.str(`[...document.querySelectorAll('`+browserCard+` input:checked')].map((i) => i.value).join()`), "a digit in free text picks nothing")

	// An input method composes " 日本": its Enter (key code 229) commits the text, never the card.
	p.do(cdpCall(input.ImeSetComposition, input.ImeSetCompositionParams{Text: " にほん", SelectionStart: 4, SelectionEnd: 4}))
	p.do(cdpCall(input.DispatchKeyEvent, input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeRawKeyDown, Key: "Enter", Code: "Enter", WindowsVirtualKeyCode: 229}))
	p.do(cdpCall(input.InsertText, input.InsertTextParams{Text: " 日本"}))
	p.do(cdpCall(input.DispatchKeyEvent, input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyUp, Key: "Enter", Code: "Enter", WindowsVirtualKeyCode: 229}))
	p.waitFor("the composed text", `document.querySelector('`+browserCard+` textarea')?.value === "1\n2 日本"`)
	require.Equal(t, 1, p.count(browserCard+`[data-channel="waterfall"]:not([aria-busy="true"])`), "the composition's Enter submitted nothing")
	require.Nil(t, browserResultOf(w.Events(sid), w.askCall(sid)))
	p.shot("keyboard-draft")

	p.do(chromedp.KeyEvent(kb.Enter))
	p.waitFor("Enter to submit", browserQuery(browserCard)+` === null`)
	res := w.awaitResult(sid, w.askCall(sid))
	require.JSONEq(t, `{"answers":[{"id":"db","selected":["Postgres"]},{"id":"extras","selected":["Tracing"],"custom":"1\n2 日本"}]}`, events.JoinText(res.Content))
}

func TestBrowserEscapeHidesAKeyedCardAndTheRowShowsItAgain(t *testing.T) {
	// Issue 13 item 4, P4: Esc hides a keyed card; its claim and countdown go on.
	t.Parallel()
	const sid = "s-esc"
	_, p := browserAsking(t, sid, browserAskDB(60), browserSayMovedOn)
	p.waitFor("a counting card", browserText(browserCountdown)+`?.startsWith("Continuing in")`)
	p.do(chromedp.Focus(chromedp.CSS(browserCard+` .option:nth-of-type(1) input`)), chromedp.KeyEvent(kb.Escape))
	p.waitFor("Esc to hide the card", browserQuery(browserCard)+` === null`)
	p.waitFor("the row's Show question", browserText(`.question-row .action-show`)+` === "Show question"`)
	p.click(`.question-row .action-show`)
	p.waitFor("the card again", browserQuery(browserCard)+` !== null`)
}
