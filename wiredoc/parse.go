// Package wiredoc runs the wire examples of Holdover's protocol documents
// against a real NATS system, so an example that drifts from what the code
// does fails a test instead of misleading a runtime author.
//
// An example is a fenced block whose info string is "wire": a transcript of
// NATS messages, each a verb line, header lines and a body.
//
//	SUB <subject> [<queue>]        subscribe; messages are kept for MSG
//	PUB <subject> [<reply>]        publish, with the headers and body below
//	MSG <subject> [<reply>]        the next message on <subject> must be this one
//	UNSUB <subject>                drop the subscription SUB made
//	AS <role>                      the steps below run on <role>'s connection
//
// A header line is "Name: value"; a line "…" among the headers of a MSG
// allows headers the example does not show. The body is every line up to
// the next verb line: JSON (pretty-printed or not; it is compacted before
// it is sent and compared as JSON) or text. "…" as the last member of a
// JSON object allows members the example does not show. Lines starting
// with "#" are comments.
//
// <name> is a placeholder for what the system chooses (ids, leases, times,
// reply subjects): in a MSG it matches anything and binds name to what it
// matched, or, once bound, must match that again; in a PUB it is replaced
// by its bound value. A placeholder standing for a whole JSON value is
// written bare (<remaining-ms>) or quoted ("<request>").
package wiredoc

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strings"
)

// Verbs of a transcript.
const (
	Sub   = "SUB"
	Pub   = "PUB"
	Msg   = "MSG"
	Unsub = "UNSUB"
	// As switches the connection the steps below run on, by the role whose
	// credentials it holds; it lasts until the next As, across blocks.
	As = "AS"
)

// Ellipsis marks headers or JSON members an example leaves out.
const Ellipsis = "…"

// Block is one fenced block of a document.
type Block struct {
	// Info is the fence's info string ("wire", "json kv/live-root.json").
	Info string
	// Line is the line of the opening fence, counted from 1.
	Line int
	// Text is the block's content.
	Text string
}

// Step is one verb of a wire transcript with what follows it.
type Step struct {
	Line    int // in the document
	Verb    string
	Subject string
	// Arg is the reply subject of a PUB or MSG, the queue group of a SUB.
	Arg     string
	Headers []Header
	// MoreHeaders is set by a "…" header line: a MSG may carry headers
	// the example does not show.
	MoreHeaders bool
	Body        string
}

// Header is one header line.
type Header struct{ Name, Value string }

func (s Step) String() string {
	out := s.Verb + " " + s.Subject
	if s.Arg != "" {
		out += " " + s.Arg
	}
	return out
}

// Blocks returns every fenced block of a Markdown document, in order.
// Fences are lines of three or more backticks; the content of a block is
// kept as written.
func Blocks(markdown []byte) ([]Block, error) {
	var out []Block
	var open *Block
	var fence string
	var body strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(markdown))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case open == nil && strings.HasPrefix(trimmed, "```"):
			fence = trimmed[:len(trimmed)-len(strings.TrimLeft(trimmed, "`"))]
			open = &Block{Info: strings.TrimSpace(trimmed[len(fence):]), Line: n}
			body.Reset()
		case open != nil && trimmed == fence:
			open.Text = body.String()
			out = append(out, *open)
			open = nil
		case open != nil:
			body.WriteString(line)
			body.WriteByte('\n')
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if open != nil {
		return nil, fmt.Errorf("line %d: the fenced block is never closed", open.Line)
	}
	return out, nil
}

var (
	verbLine   = regexp.MustCompile(`^(SUB|PUB|MSG|UNSUB|AS) (\S+)(?: (\S+))?$`)
	headerLine = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9-]*): (.*)$`)
)

// Steps parses the transcript of a wire block.
func Steps(b Block) ([]Step, error) {
	var steps []Step
	var cur *Step
	var body []string
	inBody := false
	flush := func() {
		if cur != nil {
			cur.Body = strings.TrimSpace(strings.Join(body, "\n"))
			steps = append(steps, *cur)
		}
		cur, body, inBody = nil, nil, false
	}
	for i, line := range strings.Split(strings.TrimRight(b.Text, "\n"), "\n") {
		n := b.Line + 1 + i
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		if m := verbLine.FindStringSubmatch(line); m != nil {
			flush()
			cur = &Step{Line: n, Verb: m[1], Subject: m[2], Arg: m[3]}
			continue
		}
		if cur == nil {
			if strings.TrimSpace(line) == "" {
				continue
			}
			return nil, fmt.Errorf("line %d: a transcript starts with SUB, PUB, MSG, UNSUB or AS, not %q", n, line)
		}
		if !inBody {
			if strings.TrimSpace(line) == Ellipsis {
				cur.MoreHeaders = true
				continue
			}
			if m := headerLine.FindStringSubmatch(line); m != nil {
				cur.Headers = append(cur.Headers, Header{Name: m[1], Value: m[2]})
				continue
			}
			if strings.TrimSpace(line) == "" {
				continue
			}
			inBody = true
		}
		body = append(body, line)
	}
	flush()
	for _, s := range steps {
		if s.Verb == Unsub && (s.Arg != "" || len(s.Headers) > 0 || s.Body != "") {
			return nil, fmt.Errorf("line %d: UNSUB takes a subject only", s.Line)
		}
		if s.Verb == As && (s.Arg != "" || len(s.Headers) > 0 || s.Body != "") {
			return nil, fmt.Errorf("line %d: AS takes a role only", s.Line)
		}
		if s.Verb == Sub && (len(s.Headers) > 0 || s.Body != "") {
			return nil, fmt.Errorf("line %d: SUB takes a subject and a queue group only", s.Line)
		}
		if s.Verb == Pub && s.MoreHeaders {
			return nil, fmt.Errorf("line %d: a PUB sends exactly its headers; %s is for MSG", s.Line, Ellipsis)
		}
	}
	return steps, nil
}
