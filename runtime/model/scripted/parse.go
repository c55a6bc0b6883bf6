package scripted

import (
	"bufio"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/holdover-dev/holdover"
)

// MaxScriptBytes bounds a script, so a mistaken file name cannot make the
// parser read something huge.
const MaxScriptBytes = 1 << 20

// maxWorkSteps bounds one work line, which expands into that many responses.
const maxWorkSteps = 10000

// Parse reads a script. Every mistake is a BAD_REQUEST error naming the
// line, and nothing of a script that has one is used.
func Parse(text string) (*Script, error) {
	if len(text) > MaxScriptBytes {
		return nil, holdover.Newf(holdover.CodeBadRequest, "script is %d bytes, over the %d byte limit", len(text), MaxScriptBytes)
	}
	s := &Script{}
	section := &s.main
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 4096), MaxScriptBytes)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
			continue
		case line == "child:":
			if section == &s.child {
				return nil, holdover.Newf(holdover.CodeBadRequest, "script line %d: the child section starts twice", n)
			}
			section = &s.child
			continue
		}
		if err := section.add(line); err != nil {
			return nil, holdover.Wrapf(err, holdover.CodeBadRequest, "script line %d", n)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, holdover.Wrap(err, holdover.CodeBadRequest, "read script")
	}
	return s, nil
}

// add parses one line of a section.
func (p *plan) add(line string) error {
	if rest, ok := cutKeyword(line, "on late answer"); ok {
		if p.onLate != nil {
			return holdover.New(holdover.CodeBadRequest, "a section has one late-answer reaction")
		}
		acts, err := parseAction(rest)
		if err != nil {
			return err
		}
		if len(acts) != 1 {
			return holdover.New(holdover.CodeBadRequest, "a late-answer reaction is one response; use say, ask, call, code or subagent")
		}
		p.onLate = &acts[0]
		return nil
	}
	when := outcomeNone
	for _, o := range []outcome{outcomeAnswered, outcomePending} {
		if rest, ok := cutKeyword(line, "if "+string(o)); ok {
			if rest == "" {
				return holdover.Newf(holdover.CodeBadRequest, "if %s needs a command", o)
			}
			when, line = o, rest
		}
	}
	if when == outcomeNone && strings.HasPrefix(line, "if ") {
		return holdover.New(holdover.CodeBadRequest, "if takes answered or pending, then a command")
	}
	acts, err := parseAction(line)
	if err != nil {
		return err
	}
	for i := range acts {
		acts[i].when = when
	}
	p.steps = append(p.steps, acts...)
	return nil
}

// parseAction parses one command into the responses it stands for: one,
// except for work, which stands for one response per step.
func parseAction(line string) ([]action, error) {
	verb, rest, _ := strings.Cut(line, " ")
	rest = strings.TrimSpace(rest)
	switch verb {
	case "say":
		if rest == "" {
			return nil, holdover.New(holdover.CodeBadRequest, "say needs text")
		}
		return []action{{text: rest}}, nil
	case "ask":
		args, err := parseAsk(rest)
		if err != nil {
			return nil, err
		}
		return []action{{tool: holdover.ToolName, args: args}}, nil
	case "call":
		name, args, _ := strings.Cut(rest, " ")
		if name == "" {
			return nil, holdover.New(holdover.CodeBadRequest, "call needs a tool name and JSON arguments")
		}
		raw, err := jsonObject(strings.TrimSpace(args))
		if err != nil {
			return nil, err
		}
		return []action{{tool: name, args: raw}}, nil
	case "code":
		if rest == "" {
			return nil, holdover.New(holdover.CodeBadRequest, "code needs a JavaScript program")
		}
		return []action{{tool: RunCodeTool, args: mustJSON(map[string]string{"code": rest})}}, nil
	case "subagent":
		if rest == "" {
			return nil, holdover.New(holdover.CodeBadRequest, "subagent needs a task")
		}
		return []action{{tool: SubagentTool, args: mustJSON(map[string]string{"task": rest})}}, nil
	case "work":
		return parseWork(rest)
	case "":
		return nil, holdover.New(holdover.CodeBadRequest, "empty command")
	}
	return nil, holdover.Newf(holdover.CodeBadRequest, "unknown command %q; use say, ask, call, code, subagent, work or on late answer", verb)
}

// parseWork reads "N [step|steps] [of DURATION]".
func parseWork(rest string) ([]action, error) {
	sc := scanner{s: rest}
	count, err := strconv.Atoi(sc.word())
	if err != nil || count < 1 || count > maxWorkSteps {
		return nil, holdover.Newf(holdover.CodeBadRequest, "work needs a step count from 1 to %d", maxWorkSteps)
	}
	if w := sc.peek(); w == "step" || w == "steps" {
		sc.word()
	}
	var each time.Duration
	if sc.peek() == "of" {
		sc.word()
		if each, err = time.ParseDuration(sc.word()); err != nil || each < 0 {
			return nil, holdover.New(holdover.CodeBadRequest, `work "of" needs a duration such as 2s or 500ms`)
		}
	}
	if !sc.done() {
		return nil, holdover.Newf(holdover.CodeBadRequest, "unexpected %q after work", sc.rest())
	}
	acts := make([]action, count)
	for i := range acts {
		acts[i] = action{tool: SleepTool, args: mustJSON(map[string]int64{"ms": each.Milliseconds()})}
	}
	return acts, nil
}

// parseAsk reads one ask_user_question call:
//
//	ID QUESTION [options A,B] [multi] [header TEXT] [and ID QUESTION ...] [timeout N]
func parseAsk(rest string) (json.RawMessage, error) {
	sc := scanner{s: rest}
	var args holdover.ToolArgs
	for {
		q := holdover.Question{ID: sc.word()}
		text, err := sc.text()
		if err != nil {
			return nil, err
		}
		q.Question = text
	options:
		for {
			switch sc.peek() {
			case "options":
				sc.word()
				if q.Options != nil {
					return nil, holdover.Newf(holdover.CodeBadRequest, "question %q lists options twice", q.ID)
				}
				labels, err := sc.list()
				if err != nil {
					return nil, err
				}
				for _, l := range labels {
					q.Options = append(q.Options, holdover.Option{Label: l})
				}
			case "multi":
				sc.word()
				q.MultiSelect = true
			case "header":
				sc.word()
				if q.Header, err = sc.text(); err != nil {
					return nil, err
				}
			default:
				break options
			}
		}
		args.Questions = append(args.Questions, q)
		if sc.peek() != "and" {
			break
		}
		sc.word()
	}
	if sc.peek() == "timeout" {
		sc.word()
		n, err := strconv.ParseInt(sc.word(), 10, 64)
		if err != nil {
			return nil, holdover.New(holdover.CodeBadRequest, "timeout needs whole seconds, or -1 to wait until answered")
		}
		args.Timeout = &n
	}
	if !sc.done() {
		return nil, holdover.Newf(holdover.CodeBadRequest, "unexpected %q in ask", sc.rest())
	}
	if err := holdover.ValidateQuestions(args.Questions); err != nil {
		return nil, holdover.Wrap(err, holdover.CodeBadRequest, "ask")
	}
	return mustJSON(args), nil
}

// jsonObject checks that text is exactly one JSON object.
func jsonObject(text string) (json.RawMessage, error) {
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(strings.NewReader(text))
	if err := dec.Decode(&obj); err != nil || obj == nil || dec.More() {
		return nil, holdover.New(holdover.CodeBadRequest, "call arguments must be one JSON object")
	}
	if _, err := dec.Token(); err == nil {
		return nil, holdover.New(holdover.CodeBadRequest, "call arguments must be one JSON object")
	}
	return mustJSON(obj), nil
}

// mustJSON encodes values that always encode: maps and structs of strings,
// numbers and slices.
func mustJSON(v any) json.RawMessage {
	data, err := json.Marshal(v)
	if err != nil {
		panic("scripted: " + err.Error())
	}
	return data
}

func cutKeyword(line, keyword string) (string, bool) {
	rest, ok := strings.CutPrefix(line, keyword)
	if !ok || (rest != "" && rest[0] != ' ') {
		return "", false
	}
	return strings.TrimSpace(rest), true
}

// scanner splits a line into words and quoted strings.
type scanner struct{ s string }

func (sc *scanner) skip()      { sc.s = strings.TrimLeft(sc.s, " \t") }
func (sc *scanner) done() bool { sc.skip(); return sc.s == "" }
func (sc *scanner) rest() string {
	sc.skip()
	return sc.s
}

// word returns the next run of non-space characters.
func (sc *scanner) word() string {
	sc.skip()
	end := strings.IndexAny(sc.s, " \t")
	if end < 0 {
		end = len(sc.s)
	}
	w := sc.s[:end]
	sc.s = sc.s[end:]
	return w
}

func (sc *scanner) peek() string {
	save := sc.s
	w := sc.word()
	sc.s = save
	return w
}

// text returns a quoted string, unquoted, or else the next word. Double
// quotes take Go escapes ("say \"hi\""); single quotes take the text up to
// the next single quote as it is ('Which DB?').
func (sc *scanner) text() (string, error) {
	sc.skip()
	if rest, ok := strings.CutPrefix(sc.s, "'"); ok {
		text, after, closed := strings.Cut(rest, "'")
		if !closed {
			return "", holdover.Newf(holdover.CodeBadRequest, "unterminated quoted text '%s", rest)
		}
		sc.s = after
		return text, nil
	}
	if !strings.HasPrefix(sc.s, `"`) {
		w := sc.word()
		if w == "" {
			return "", holdover.New(holdover.CodeBadRequest, "missing text")
		}
		return w, nil
	}
	quoted, err := strconv.QuotedPrefix(sc.s)
	if err != nil {
		return "", holdover.Newf(holdover.CodeBadRequest, "unterminated or malformed quoted text %s", sc.s)
	}
	sc.s = sc.s[len(quoted):]
	text, err := strconv.Unquote(quoted)
	if err != nil {
		return "", holdover.Newf(holdover.CodeBadRequest, "malformed quoted text %s", quoted)
	}
	return text, nil
}

// list returns comma-separated items, each quoted or bare: a,"b c", d.
func (sc *scanner) list() ([]string, error) {
	var items []string
	for {
		sc.skip()
		var item string
		if strings.HasPrefix(sc.s, `"`) || strings.HasPrefix(sc.s, "'") {
			var err error
			if item, err = sc.text(); err != nil {
				return nil, err
			}
		} else {
			end := strings.IndexAny(sc.s, ", \t")
			if end < 0 {
				end = len(sc.s)
			}
			item, sc.s = sc.s[:end], sc.s[end:]
		}
		if item == "" {
			return nil, holdover.New(holdover.CodeBadRequest, "options needs comma-separated labels")
		}
		items = append(items, item)
		sc.skip()
		if !strings.HasPrefix(sc.s, ",") {
			return items, nil
		}
		sc.s = sc.s[1:]
	}
}
