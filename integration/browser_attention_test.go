package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// browserRecordAlerts, run before the page's scripts, keeps every
// Notification the page makes (window.__notes) and counts the tones it
// starts (window.__tones), through the browser's own constructors.
const browserRecordAlerts = `(() => {
	const Real = window.Notification;
	window.__notes = [];
	class Recorded extends Real {
		constructor(title, options) { super(title, options); window.__notes.push(this); }
	}
	Object.defineProperty(Recorded, "permission", { get: () => Real.permission });
	Recorded.requestPermission = (...args) => Real.requestPermission(...args);
	window.Notification = Recorded;
	window.__tones = 0;
	const create = AudioContext.prototype.createOscillator;
	AudioContext.prototype.createOscillator = function () { window.__tones++; return create.call(this); };
})()`

func TestBrowserAttentionBadgeNotificationsAndSoundBringThePersonToTheCard(t *testing.T) {
	// Issue 13 item 2: the title and favicon count the questions waiting; notifications are asked
	// for from a click; a question that arrives off screen notifies (one on screen does not), and
	// again in its last ten seconds; a tone plays; the notification's click opens its card.
	t.Parallel()
	w := newBrowserWorld(t, browserAskDB(14)+"\n"+browserSayMovedOn)
	const here, there = "s-att-here", "s-att-there"
	url := fmt.Sprintf("http://%s/?token=%s&session=%s,%s#/s/%s", w.gw.addr, browserToken, here, there, here)
	p := w.openURL(url, "user", false, browserRecordAlerts)
	require.Equal(t, "false", p.str(browserQuery(`.notify-toggle`)+`.getAttribute("aria-pressed")`))
	require.Equal(t, "default", p.str(`Notification.permission`), "nothing is asked on load")

	// The browser grants what the person allows when the page asks from the click.
	p.do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, browser.SetPermission, browser.SetPermissionParams{
			Permission: &browser.PermissionDescriptor{Name: "notifications"}, Setting: browser.PermissionSettingGranted, Origin: "http://" + w.gw.addr,
		})
		return err
	}))
	p.click(`.notify-toggle`)
	p.waitFor("notifications on", browserQuery(`.notify-toggle`)+`.getAttribute("aria-pressed") === "true"`)
	p.click(`.sound-toggle`)
	p.waitFor("sound on, heard once", browserQuery(`.sound-toggle`)+`.getAttribute("aria-pressed") === "true" && window.__tones === 1`)

	w.start(w.ctx, here, "Set up the service")
	p.waitFor("the question on screen", browserText(browserCountdown)+`?.startsWith("Continuing in")`)
	p.waitFor("the title badge", `document.title === "(1) Holdover" && document.querySelector('link[rel="icon"]').getAttribute("href") === "icon-1.svg"`)
	require.Zero(t, p.num(`window.__notes.length`), "a question on screen notifies nobody")

	w.start(w.ctx, there, "Set up the service")
	p.waitFor("the second question counted", `document.title === "(2) Holdover" && document.querySelector('link[rel="icon"]').getAttribute("href") === "icon-2.svg"`)
	p.waitFor("a notification for the one off screen", `window.__notes.length >= 1 && window.__notes[0].title === "Question from `+there+`"`)
	require.Equal(t, "Which database should the service use?", p.str(`window.__notes[0].body`))
	p.waitFor("its tone", `window.__tones >= 2`)
	p.waitFor("the about-to-end notification, in its last ten seconds", `window.__notes.some((n) => n.title === "Answer soon: `+there+` moves on")`)
	require.Equal(t, 2, p.num(`window.__notes.length`), "one arrival and one about-to-end, for the Session off screen only")
	p.shot("badge-page")

	// The click, as the browser delivers it to the notification, opens the card.
	p.eval(`(window.__notes[0].dispatchEvent(new Event("click")), true)`, nil)
	p.waitFor("its card", `location.hash.startsWith("#/s/`+there+`/c/") && `+browserQuery(browserCard)+` !== null`)
	require.Equal(t, there, p.str(browserText(`.crumbs .session-id`)))

	// The badge itself, as the tab shows it: the title, and the favicon the page names.
	title, icon := p.str(`document.title`), p.str(`document.querySelector('link[rel="icon"]').getAttribute("href")`)
	require.NoError(t, os.WriteFile(filepath.Join(w.shotsDir, t.Name()+"-title.txt"), []byte(title+" · "+icon+"\n"), 0o644))
	p.do(chromedp.Navigate(fmt.Sprintf("http://%s/%s", w.gw.addr, icon)), chromedp.EmulateViewport(64, 64, chromedp.EmulateScale(4)))
	p.shot("title-badge-favicon")
}
