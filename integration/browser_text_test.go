package integration

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
)

// Issue 24: text an agent wrote cannot spoof or break the card. A right-
// to-left override in a question, its header and an option's label shows
// as a visible marker and reorders nothing (no bidirectional control
// reaches the page's text), while the answer carries the label exactly as
// the agent wrote it. A 300-character label without a break wraps inside
// the card, on a desktop and on a phone.
func TestBrowserBidiControlsShowAsMarkersAndLongLabelsWrap(t *testing.T) {
	t.Parallel()
	w := newBrowserWorld(t, browserSayMovedOn)
	const sid = "s-bidi"
	p := w.open(sid, "user", false)
	spoofed := "Keep the data \u202Eeteled\u202C"
	long := strings.Repeat("x", 300)
	questions := []holdover.Question{{
		ID: "q", Header: "Data\u2067 \u2069", Question: "Delete the repository? \u202Eon\u202C",
		Options: []holdover.Option{{Label: spoofed, Description: "\u200Fa mark\u200E and \u061Can Arabic mark"}, {Label: long}},
	}}
	answers := make(chan []holdover.Answer, 1)
	errs := make(chan error, 1)
	asker := w.asker()
	go func() {
		a, err := asker.Ask(w.ctx, holdover.AskRequest{Session: sid, Questions: questions})
		answers <- a
		errs <- err
	}()

	p.waitFor("the card", browserQuery(browserCard+` .q-text`)+` !== null`)
	require.Equal(t, "Delete the repository? ⟦U+202E⟧on⟦U+202C⟧", p.str(browserText(browserCard+` .q-text`)))
	require.Equal(t, "Data⟦U+2067⟧ ⟦U+2069⟧", p.str(browserText(browserCard+` .chip`)))
	require.Equal(t, "Keep the data ⟦U+202E⟧eteled⟦U+202C⟧", p.str(browserText(browserCard+` .option:nth-of-type(1) .opt-label`)))
	require.Equal(t, "⟦U+200F⟧a mark⟦U+200E⟧ and ⟦U+061C⟧an Arabic mark", p.str(browserText(browserCard+` .option:nth-of-type(1) .opt-desc`)))
	require.False(t, p.bool(`/[\u202A-\u202E\u2066-\u2069\u200E\u200F\u061C]/.test(document.body.innerText)`), "no bidirectional control reaches the page's text")

	// The long label wraps: nothing in the card is wider than the card.
	fits := `(() => { const card = ` + browserQuery(browserCard) + `; const box = card.getBoundingClientRect();
		return card.scrollWidth <= card.clientWidth && [...card.querySelectorAll(".option, .opt-label")].every((e) => e.getBoundingClientRect().right <= box.right + 0.5); })()`
	require.True(t, p.bool(fits), "a long unbroken label stays inside the card")
	require.Greater(t, p.num(`Math.round(`+browserQuery(browserCard+` .option:nth-of-type(2) .opt-label`)+`.getBoundingClientRect().height)`), 40, "it wraps onto several lines")
	p.shot("bidi-and-long-label")
	p.phone()
	p.waitFor("the card at a phone's width", fits)
	p.fitsPhone("bidi-and-long-label")
	p.shot("bidi-and-long-label-phone")

	p.click(browserCard + ` .option:nth-of-type(1)`)
	p.click(browserCard + ` .submit`)
	require.NoError(t, <-errs)
	got := <-answers
	require.Len(t, got, 1)
	require.Equal(t, []string{spoofed}, got[0].Selected, "the answer is the label as the agent wrote it")
}
