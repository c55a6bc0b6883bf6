package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/inbox"
	"github.com/holdover-dev/holdover/lease"
	"github.com/holdover-dev/holdover/logcheck"
	"github.com/holdover-dev/holdover/schemas"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/userquestions"
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
	// Answers read before they write: whether the one write from a kept
	// View would be taken depends on how soon the projection worker
	// proves it, which no transcript can pin down.
	w.readingWorker()
	// Each step runs on the credentials of the role the transcript names
	// (AS agent, AS gateway, AS operator), with authentication on, so an
	// example a role may not perform fails too: NATS reports a denied
	// publish or subscription to the connection's error handler only,
	// which fails the test.
	var (
		mu     sync.Mutex
		denied []string
		byRole []*nats.Conn
	)
	r := wiredoc.NewRunner(w.conn(), func(role string) (*nats.Conn, error) {
		if !auth.Role(role).Known() {
			return nil, fmt.Errorf("no role %q", role)
		}
		nc, _ := w.env.As(t, auth.Role(role), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			mu.Lock()
			defer mu.Unlock()
			denied = append(denied, role+": "+err.Error())
		}))
		byRole = append(byRole, nc)
		return nc, nil
	})
	noneDenied := func(line int) {
		t.Helper()
		for _, nc := range byRole {
			require.NoError(t, nc.Flush())
		}
		mu.Lock()
		defer mu.Unlock()
		require.Empty(t, denied, "%s: a step of the transcript at line %d (or just before) is one its role may not take", agentProtocol, line)
	}
	t.Cleanup(r.Close)
	wire := newWireSchemas()
	r.Observe = wire.observe
	checked := map[string]bool{}

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
			noneDenied(b.Line)
			ran++
		case "json":
			require.NotEmpty(t, arg, "%s:%d: a JSON example names the schema it fits (```json <schema file>)", agentProtocol, b.Line)
			problems, err := schemas.Validate(arg, []byte(b.Text))
			require.NoError(t, err, "%s:%d", agentProtocol, b.Line)
			require.Empty(t, problems, "%s:%d: the example does not fit %s", agentProtocol, b.Line, arg)
		case "check":
			checked[arg] = true
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
	require.Empty(t, wire.refusedUnseen, "requests that break their schema must be refused; these got no error reply")
	for sid, problems := range wire.badEvents {
		require.True(t, checked[sid], "Session %s has events that break event.json (%v); show what `holdover check %s` says of them", sid, problems, sid)
	}
}

// wireSchemas names the schema of each message of the agent protocol by
// the subject it travels on, and the schema of what answers a request by
// the request's subject, and checks every message against it. A request
// the example sends broken on purpose must be refused with an error
// reply; an event that breaks event.json must be one the document shows
// `holdover check` listing.
type wireSchemas struct {
	replies       map[string]string   // reply subject → the schema of what arrives there
	refusedUnseen map[string][]string // reply subject → the problems of a request that must be refused
	badEvents     map[string][]string // Session → problems of events sent
}

func newWireSchemas() *wireSchemas {
	return &wireSchemas{replies: map[string]string{}, refusedUnseen: map[string][]string{}, badEvents: map[string][]string{}}
}

// wireRoutes are the subjects whose messages have a schema: the body's,
// and that of the reply to it ("" when the reply is a JetStream ack or
// has none).
var wireRoutes = []struct {
	subject       *regexp.Regexp
	schema, reply string
}{
	{regexp.MustCompile(`^holdover\.session\.[^.]+\.events$`), schemas.EventSchema, ""},
	{regexp.MustCompile(`^holdover\.session\.[^.]+\.inbox(\.[^.]+)?$`), "inbox/message.json", ""},
	{regexp.MustCompile(`^holdover\.session\.[^.]+\.ask$`), "waterfall/request.json", "waterfall/outcome.json"},
	{regexp.MustCompile(`^holdover\.session\.[^.]+\.ask\.cancel$`), "waterfall/cancel.json", ""},
	{regexp.MustCompile(`^holdover\.session\.[^.]+\.discard$`), "requests/discard.json", "replies/discard.json"},
	{regexp.MustCompile(`^holdover\.runtime\.resume$`), "requests/resume.json", "replies/resume.json"},
	{regexp.MustCompile(`^holdover\.q\.askTimed$`), "requests/ask-timed.json", "replies/ask-timed.json"},
	{regexp.MustCompile(`^holdover\.q\.ask$`), "requests/ask.json", "replies/ask.json"},
	{regexp.MustCompile(`^holdover\.q\.answer$`), "requests/answer.json", "replies/answer.json"},
	{regexp.MustCompile(`^holdover\.q\.view$`), "requests/view.json", "replies/view.json"},
	{regexp.MustCompile(`^holdover\.q\.inflight$`), "requests/inflight.json", "replies/inflight.json"},
	{regexp.MustCompile(`^holdover\.claim\.wait\.`), "frames/claim.json", ""},
	{regexp.MustCompile(`^\$KV\.liveRoots\.[^.]+$`), "kv/live-root.json", ""},
	{regexp.MustCompile(`^\$JS\.API\.DIRECT\.GET\.KV_liveRoots\.`), "", "kv/live-root.json"},
	{regexp.MustCompile(`^\$JS\.API\.DIRECT\.GET\.SESSIONS\.holdover\.session\.[^.]+\.events$`), "", schemas.EventSchema},
	{regexp.MustCompile(`^\$JS\.API\.DIRECT\.GET\.SESSIONS\.holdover\.session\.[^.]+\.inbox`), "", "inbox/message.json"},
}

func (w *wireSchemas) observe(m *nats.Msg, sent bool) error {
	schema := w.replies[m.Subject]
	var reply string
	for _, r := range wireRoutes {
		if r.subject.MatchString(m.Subject) {
			schema, reply = r.schema, r.reply
			break
		}
	}
	if reply != "" && m.Reply != "" {
		w.replies[m.Reply] = reply
	}
	switch {
	case m.Header.Get(userquestions.ErrorCodeHeader) != "":
		delete(w.refusedUnseen, m.Subject) // refused, as it had to be
		schema = "replies/error.json"
	case m.Header.Get(userquestions.HeaderFrame) == userquestions.FrameAccepted:
		schema = "frames/accepted.json"
	case inbox.IsMarker(m.Header):
		if len(m.Data) > 0 {
			return fmt.Errorf("a reservation marker has a body: %q", m.Data)
		}
		return nil
	case m.Header.Get("Status") != "":
		// A NATS status (404 for a direct get of an empty subject, 503 no
		// responders) is no Holdover body.
		if len(m.Data) > 0 {
			return fmt.Errorf("a status message has a body: %q", m.Data)
		}
		return nil
	}
	if schema == "" {
		if json.Valid(m.Data) && len(m.Data) > 0 && !natsOwn(m.Subject) {
			return fmt.Errorf("a JSON body on %s, which no schema covers: every body of the protocol has one (schemas/)", m.Subject)
		}
		return nil
	}
	problems, err := schemas.Validate(schema, m.Data)
	if err != nil || len(problems) == 0 {
		return err
	}
	var said []string
	for _, p := range problems {
		said = append(said, p.String())
	}
	switch {
	case sent && schema == schemas.EventSchema:
		sid, _ := streams.SessionFromSubject(m.Subject)
		w.badEvents[sid] = append(w.badEvents[sid], said...)
		return nil
	case sent && m.Reply != "" && strings.HasPrefix(m.Subject, streams.ServicePrefix+"."):
		w.refusedUnseen[m.Reply] = said // the service must refuse it
		return nil
	}
	return fmt.Errorf("the message breaks %s: %s", schema, strings.Join(said, "; "))
}

// natsOwn reports whether subject carries NATS's own shapes, not
// Holdover's: the JetStream API and its acks and advisories, and the
// replies to them.
func natsOwn(subject string) bool {
	return strings.HasPrefix(subject, "$JS.") || strings.HasPrefix(subject, "_INBOX.")
}

// Every link of docs/agent-protocol.md leads somewhere: a file of the
// repository, or a heading of the page (GitHub's anchor for it).
func TestAgentProtocolLinks(t *testing.T) {
	doc, err := os.ReadFile(agentProtocol)
	require.NoError(t, err)
	anchors := map[string]bool{}
	for _, h := range regexp.MustCompile(`(?m)^#+ (.+)$`).FindAllStringSubmatch(string(doc), -1) {
		anchors[githubAnchor(h[1])] = true
	}
	links := regexp.MustCompile(`\]\(([^)\s]+)\)`).FindAllStringSubmatch(string(doc), -1)
	require.NotEmpty(t, links)
	for _, l := range links {
		target, anchor, _ := strings.Cut(l[1], "#")
		if target == "" {
			assert.True(t, anchors[anchor], "link %s names no heading of the page", l[1])
			continue
		}
		_, err := os.Stat(filepath.Join(filepath.Dir(agentProtocol), target))
		assert.NoError(t, err, "link %s names no file", l[1])
	}
}

// githubAnchor is the anchor GitHub gives a heading: lower case, spaces
// as '-', punctuation other than '-' and '_' dropped.
func githubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Every header the code names, and every subject it builds, is written in
// the runtime author's page (or, for the Client's own, in protocol.md):
// a header or subject added to the wire without its documentation fails
// here (issue 8: everything that crosses NATS is documented). Headers
// are found as the code spells them, string constants of the module's
// packages; subjects are built from package streams' names, the one
// place they are defined.
func TestAgentProtocolNamesEveryHeaderAndSubject(t *testing.T) {
	page, err := os.ReadFile(agentProtocol)
	require.NoError(t, err)
	client, err := os.ReadFile(filepath.Join("..", "docs", "protocol.md"))
	require.NoError(t, err)
	docs := string(page) + string(client)

	headers := headerConstants(t, "..")
	for _, h := range []string{"Holdover-Prev-Seq", "Holdover-Caller-Lease", "Holdover-Reservation", "Holdover-User"} {
		require.Contains(t, headers, h, "the scan of the code's constants misses a header it must find")
	}
	for h := range headers {
		assert.True(t, strings.Contains(docs, "`"+h), "header %s is in the code but in neither docs/agent-protocol.md nor docs/protocol.md", h)
	}

	bySid := func(wildcard string) string { return strings.Replace(wildcard, "*", "<sid>", 1) }
	subjects := []string{
		bySid(streams.AllEvents), bySid(streams.AllInboxes), bySid(streams.AllAsks),
		bySid(streams.AllCancels), bySid(streams.AllDiscards),
		bySid(streams.AllInboxes) + ".<call token>",
		streams.ResumeSubject,
		streams.OutcomePrefix + ".",
		streams.LeasePrefix + ".",
		streams.ClaimFramePrefix + ".",
		streams.WaitPrefix + ".",
		lease.AdvisoryPrefix,
		"$KV." + streams.QuestionsBucket + ".<sid>",
		"$KV." + streams.RootsBucket + ".<sid>",
	}
	for _, ep := range []string{streams.EndpointAsk, streams.EndpointAskTimed, streams.EndpointInflight, streams.EndpointAnswer, streams.EndpointView} {
		subjects = append(subjects, streams.ServicePrefix+"."+ep)
	}
	for _, s := range subjects {
		assert.True(t, strings.Contains(string(page), s), "subject %s is built by the code but not in docs/agent-protocol.md", s)
	}
}

// headerConstants returns every string constant of the module's Go
// packages (tests, the TypeScript SDK's and web's folders left out) whose
// value is a Holdover or NATS header name.
func headerConstants(t *testing.T, root string) map[string]bool {
	t.Helper()
	header := regexp.MustCompile(`^(Holdover|Nats)-[A-Z][A-Za-z]*(-[A-Z][A-Za-z]*)*$`)
	found := map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "node_modules", "web", "sdk", ".git", "testdata":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			decl, ok := n.(*ast.GenDecl)
			if !ok || decl.Tok != token.CONST {
				return true
			}
			for _, spec := range decl.Specs {
				for _, v := range spec.(*ast.ValueSpec).Values {
					if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
						if s, err := strconv.Unquote(lit.Value); err == nil && header.MatchString(s) {
							found[s] = true
						}
					}
				}
			}
			return false
		})
		return nil
	})
	require.NoError(t, err)
	return found
}
