package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/answerer"
	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/gateway"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/web"
)

// The browser tests drive the real web Client (web/dist, as the gateway
// embeds it) in headless Chromium against the whole system: an embedded
// NATS server, the question worker, a Go agent runtime playing a script
// (agentWorld) and a gateway serving the UI on a loopback port. Every
// state a test reaches is saved as a screenshot under
// testdata/screenshots (git-ignored) for a person to look at.

// browserPatience bounds every wait for something the page must show.
const browserPatience = 20 * time.Second

// browserToken is the one access token of the tests' gateway; it grants every Session.
const browserToken = "browser-token"

// chromiumPath finds Debian's chromium. Without it the browser tests skip
// on a developer's machine and fail in CI (CI=true), where they must run.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed, and CI=true requires the browser tests to run: apt-get install -y chromium")
	}
	t.Skip("skipping the browser tests: chromium is not installed (apt-get install -y chromium); they run whenever it is, and always with CI=true")
	return ""
}

// browserWorld is agentWorld (worker, projection, agent runtime) plus a
// gateway serving the web Client, and a headless Chromium.
type browserWorld struct {
	*agentWorld
	gw       *browserGateway
	browser  context.Context // the Chromium process; tabs and browser contexts derive from it
	shots    int
	shotsDir string
}

func newBrowserWorld(t *testing.T, script string) *browserWorld {
	t.Helper()
	chromium := chromiumPath(t)
	w := &browserWorld{agentWorld: newAgentWorld(t, script), shotsDir: filepath.Join("testdata", "screenshots")}
	w.gw = &browserGateway{t: t, natsURL: w.env.Server.ClientURL(), creds: w.env.Auth.Creds(w.env.Tenant, auth.Gateway), addr: "127.0.0.1:0"}
	w.gw.start()
	t.Cleanup(w.gw.kill)

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-renderer-backgrounding", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	browser, cancelBrowser := chromedp.NewContext(alloc)
	// The first Run starts the browser; it lives as long as this context.
	require.NoError(t, chromedp.Do(browser), "start chromium")
	w.browser = browser
	t.Cleanup(func() {
		cancelBrowser()
		cancelAlloc()
	})
	require.NoError(t, os.MkdirAll(w.shotsDir, 0o755))
	return w
}

// browserGateway is a gateway serving the web Client on a fixed loopback
// address, on a NATS connection of its own, so a test can kill it and
// start it again where the page will reconnect. Only the test's goroutine
// uses it.
type browserGateway struct {
	t        *testing.T
	natsURL  string
	creds    string // a gateway's NATS credentials
	addr     string
	nc       *nats.Conn
	answerer *answerer.Client
	cancel   context.CancelFunc
	served   chan error
}

func (g *browserGateway) start() {
	g.t.Helper()
	quiet := slog.New(slog.DiscardHandler)
	secure, err := ops.NATSConfig{Creds: g.creds}.Options()
	require.NoError(g.t, err)
	nc, err := nats.Connect(g.natsURL, append(secure, nats.Name("browser-gateway"), nats.ReconnectWait(gateway.DefaultReconnectWait))...)
	require.NoError(g.t, err)
	_, js := embeddedtest.Connect(g.t, g.natsURL, secure...)
	tokens, err := gateway.NewTokens(map[string]gateway.Grant{browserToken: {User: "browser", Sessions: []string{gateway.AllSessions}}})
	require.NoError(g.t, err)
	ans, err := answerer.New(nc, answerer.Config{Log: quiet})
	require.NoError(g.t, err)
	srv, err := gateway.New(gateway.Config{
		NATS:      nc,
		JetStream: js,
		Tokens:    tokens,
		Services:  []gateway.Service{gateway.UserQuestions(ans), gateway.Sessions()},
		Files:     web.Files(),
		Logger:    quiet,
	})
	require.NoError(g.t, err)
	// The address is fixed after the first start: a restarted gateway
	// listens where the page reconnects. A port in TIME_WAIT may take a
	// moment to free.
	var ln net.Listener
	require.Eventually(g.t, func() bool {
		ln, err = net.Listen("tcp", g.addr)
		return err == nil
	}, browserPatience, 50*time.Millisecond, "listen on %s: %v", g.addr, err)
	g.addr = ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Run(ctx, ln, func() {}) }()
	g.nc, g.answerer, g.cancel, g.served = nc, ans, cancel, served
}

// kill stops the gateway the hard way: its NATS connection drops first
// (the claims it held are lost, as when the process dies), then its
// WebSockets close.
func (g *browserGateway) kill() {
	g.t.Helper()
	if g.cancel == nil {
		return
	}
	g.nc.Close()
	g.cancel()
	if err := <-g.served; err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, http.ErrServerClosed) {
		g.t.Errorf("gateway stopped: %v", err)
	}
	g.answerer.Close()
	g.cancel = nil
}

// pageURL is the address a person opens: the token and the Session in the query.
func (g *browserGateway) pageURL(sid string) string {
	return fmt.Sprintf("http://%s/?token=%s&session=%s", g.addr, browserToken, sid)
}

// inboxURL is the inbox: the token and no Session.
func (g *browserGateway) inboxURL() string {
	return fmt.Sprintf("http://%s/?token=%s", g.addr, browserToken)
}

// browserPage is one tab of the web Client.
type browserPage struct {
	w    *browserWorld
	t    *testing.T
	ctx  context.Context
	name string

	mu         sync.Mutex
	exceptions []string
}

// open opens the Client for Session sid in a new tab. A tab of its own
// browser context (isolated storage, like a second browser) when isolated.
func (w *browserWorld) open(sid, name string, isolated bool) *browserPage {
	w.t.Helper()
	return w.openURL(w.gw.pageURL(sid), name, isolated)
}

// openURL opens the page at url in a new tab and waits until it is live;
// before the page's own scripts, init runs in it (nothing when empty).
func (w *browserWorld) openURL(url, name string, isolated bool, init ...string) *browserPage {
	w.t.Helper()
	var opts []chromedp.ContextOption
	if isolated {
		opts = append(opts, chromedp.WithNewBrowserContext())
	}
	ctx, cancel := chromedp.NewContext(w.browser, opts...)
	w.t.Cleanup(cancel)
	// The first run creates the tab, which lives as long as the context of
	// that run: this one, without a timeout.
	require.NoError(w.t, chromedp.Do(ctx), "open a tab")
	p := &browserPage{w: w, t: w.t, ctx: ctx, name: name}
	// Every tab acts as the focused window, so focus and blur events fire
	// as they do for a person, even with two tabs open.
	p.do(chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetFocusEmulationEnabled, emulation.SetFocusEmulationEnabledParams{Enabled: true})
		return err
	}))
	go p.watchConsole()
	w.t.Cleanup(p.noExceptions)
	for _, src := range init {
		p.do(chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := cdp.Call(ctx, t, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: src})
			return err
		}))
	}
	p.do(chromedp.Navigate(url))
	p.waitFor("the page to be live", browserLive)
	return p
}

// browserLive is true once every watch of the page is live (its ready
// frame came); the status line then reads "Live".
const browserLive = `document.getElementById("status")?.dataset.state === "live" && document.getElementById("status")?.textContent === "Live"`

// watchConsole keeps the page's uncaught exceptions; a test fails on any.
func (p *browserPage) watchConsole() {
	for msg, err := range chromedp.Console(p.ctx) {
		if err != nil {
			return
		}
		if msg.IsException() {
			p.mu.Lock()
			p.exceptions = append(p.exceptions, msg.String())
			p.mu.Unlock()
		}
	}
}

func (p *browserPage) noExceptions() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range p.exceptions {
		p.t.Errorf("page %s threw: %s", p.name, e)
	}
}

func (p *browserPage) do(actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, browserPatience)
	defer cancel()
	require.NoError(p.t, chromedp.Do(ctx, actions...))
}

// eval evaluates a JavaScript expression in the page and decodes its value into out.
func (p *browserPage) eval(expr string, out any) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, browserPatience)
	defer cancel()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[json.RawMessage](expr))
	require.NoError(p.t, err, "evaluate %s", expr)
	if out != nil {
		require.NoError(p.t, json.Unmarshal(raw, out), "decode the value of %s: %s", expr, raw)
	}
}

// str is the string value of a JavaScript expression.
func (p *browserPage) str(expr string) string {
	p.t.Helper()
	var s string
	p.eval(`String(`+expr+` ?? "")`, &s)
	return s
}

// waitFor waits until the JavaScript expression is truthy, and on a timeout fails with a screenshot and the page's text.
func (p *browserPage) waitFor(what, expr string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, browserPatience+5*time.Second)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(browserPatience)))
	if err != nil {
		p.shot("timeout")
		p.t.Fatalf("page %s: waited %s for %s (%s): %v\nthe page reads:\n%s", p.name, browserPatience, what, expr, err, p.str(`document.body.innerText`))
	}
}

// waitAcross is waitFor across a navigation the page is making: while
// the old document goes and the new one loads, the expression has no
// context to run in, and it is tried again.
func (p *browserPage) waitAcross(what, expr string) {
	p.t.Helper()
	deadline := time.Now().Add(browserPatience)
	for {
		ctx, cancel := context.WithTimeout(p.ctx, time.Second)
		raw, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`Boolean(`+expr+`)`))
		cancel()
		if err == nil && raw {
			return
		}
		if time.Now().After(deadline) {
			p.shot("timeout")
			p.t.Fatalf("page %s: waited %s for %s (%s): %v", p.name, browserPatience, what, expr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// click clicks the element like a person: a real mouse event at its centre.
func (p *browserPage) click(css string) {
	p.t.Helper()
	p.waitFor("something to click at "+css, browserQuery(css)+` !== null`)
	p.do(chromedp.Click(chromedp.CSS(css)))
}

// keys types keys into the focused element, or the element at css first.
func (p *browserPage) keys(css, text string) {
	p.t.Helper()
	p.do(chromedp.SendKeys(chromedp.CSS(css), text))
}

// shot saves a screenshot of the page as testdata/screenshots/<test>-<n>-<page>-<state>.png.
func (p *browserPage) shot(state string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, browserPatience)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		p.t.Logf("screenshot %s: %v", state, err)
		return
	}
	p.w.shots++
	name := fmt.Sprintf("%s-%02d-%s-%s.png", strings.ReplaceAll(p.t.Name(), "/", "_"), p.w.shots, p.name, state)
	require.NoError(p.t, os.WriteFile(filepath.Join(p.w.shotsDir, name), png, 0o644))
}

// bool is the truth of a JavaScript expression.
func (p *browserPage) bool(expr string) bool {
	p.t.Helper()
	var b bool
	p.eval(`Boolean(`+expr+`)`, &b)
	return b
}

// holdSettles keeps the page's settle frames from leaving: an answer still
// on its way to the Host, which a test lets go with releaseSettles. It
// stands for transport latency, the race C4 is about.
func (p *browserPage) holdSettles() {
	p.t.Helper()
	p.eval(`(() => {
		const send = WebSocket.prototype.send;
		window.__held = [];
		WebSocket.prototype.send = function (data) {
			if (typeof data === "string" && JSON.parse(data).type === "settle") { window.__held.push([this, data]); return; }
			return send.call(this, data);
		};
		window.__release = () => { WebSocket.prototype.send = send; for (const [ws, data] of window.__held.splice(0)) send.call(ws, data); };
		return true;
	})()`, nil)
}

// releaseSettles sends the held settle frames.
func (p *browserPage) releaseSettles() {
	p.t.Helper()
	p.eval(`(window.__release(), true)`, nil)
}

// num is the integer value of a JavaScript expression.
func (p *browserPage) num(expr string) int {
	p.t.Helper()
	var n int
	p.eval(`Number(`+expr+`)`, &n)
	return n
}

// count is the number of elements at css.
func (p *browserPage) count(css string) int {
	p.t.Helper()
	var n int
	p.eval(`document.querySelectorAll(`+browserString(css)+`).length`, &n)
	return n
}

// countText is the number of elements at css whose text contains s.
func (p *browserPage) countText(css, s string) int {
	p.t.Helper()
	var n int
	p.eval(`[...document.querySelectorAll(`+browserString(css)+`)].filter((e) => e.textContent.includes(`+browserString(s)+`)).length`, &n)
	return n
}

// browserQuery is document.querySelector(css) as JavaScript.
func browserQuery(css string) string {
	q, _ := json.Marshal(css)
	return "document.querySelector(" + string(q) + ")"
}

// browserString quotes s as a JavaScript string literal.
func browserString(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}

// The phone of issue 13 item 6: 390×844 CSS pixels, a touch screen.
const (
	phoneWidth  = 390
	phoneHeight = 844
	// minTarget is the least height of anything a thumb must hit.
	minTarget = 44
)

// phone makes the tab a phone-sized touch screen.
func (p *browserPage) phone() {
	p.t.Helper()
	p.do(chromedp.EmulateViewport(phoneWidth, phoneHeight, chromedp.EmulateScale(2), chromedp.EmulateMobile))
}

// fitsPhone checks the page as it stands: nothing scrolls sideways, and
// every visible control is at least minTarget pixels high (an option's
// hit target is its whole label; a link inside running Markdown text is
// exempt, as WCAG 2.5.8 exempts inline targets).
func (p *browserPage) fitsPhone(state string) {
	p.t.Helper()
	var wide struct{ Scroll, Client int }
	p.eval(`({Scroll: document.documentElement.scrollWidth, Client: document.documentElement.clientWidth})`, &wide)
	require.LessOrEqual(p.t, wide.Scroll, wide.Client, "%s: the page scrolls sideways at %dpx", state, phoneWidth)
	var small []string
	p.eval(`[...document.querySelectorAll("a, button, textarea, .option, input:not([type=radio]):not([type=checkbox])")]
		.filter((e) => e.offsetParent !== null && !e.closest(".option, .sr-only, .markdown"))
		.concat([...document.querySelectorAll(".option")].filter((e) => e.offsetParent !== null))
		.filter((e) => e.getBoundingClientRect().height < `+fmt.Sprint(minTarget)+`)
		.map((e) => e.outerHTML.slice(0, 120) + " " + Math.round(e.getBoundingClientRect().height) + "px")`, &small)
	require.Empty(p.t, small, "%s: hit targets under %dpx", state, minTarget)
}

// axeSource is axe-core's script, from the web Client's pinned dev dependencies (npm ci in web/).
var axeSource = sync.OnceValues(func() ([]byte, error) { return os.ReadFile("../web/node_modules/axe-core/axe.min.js") })

// accessible runs axe-core in the page and fails on any serious or
// critical violation (issue 13 item 8).
func (p *browserPage) accessible(state string) {
	p.t.Helper()
	src, err := axeSource()
	if errors.Is(err, fs.ErrNotExist) && os.Getenv("CI") != "true" {
		// As with chromium: a developer's machine may lack it, CI (make test runs npm ci first) never.
		p.t.Logf("%s: axe-core not checked: it is a dev dependency of web/, run npm ci there", state)
		return
	}
	require.NoError(p.t, err, "axe-core is a dev dependency of web/: run npm ci there")
	p.eval(string(src)+";true", nil)
	ctx, cancel := context.WithTimeout(p.ctx, browserPatience)
	defer cancel()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[json.RawMessage](`axe.run(document, {resultTypes: ["violations"]}).then((r) => r.violations
		.filter((v) => v.impact === "serious" || v.impact === "critical")
		.map((v) => v.impact + " " + v.id + ": " + v.help + " — " + v.nodes.map((n) => n.target.join(" ")).join(", ")))`, chromedp.EvalAsValue, chromedp.EvalAwaitPromise))
	require.NoError(p.t, err, "run axe-core")
	var violations []string
	require.NoError(p.t, json.Unmarshal(raw, &violations))
	require.Empty(p.t, violations, "%s: axe-core finds serious or critical violations", state)
}
