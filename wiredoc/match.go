package wiredoc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// Vars are the placeholders bound so far: name → the text it stands for
// (a string's content, or the JSON of any other value).
type Vars map[string]string

var placeholder = regexp.MustCompile(`<([a-z][a-z0-9-]*)>`)

// Fill replaces every placeholder of text by its bound value. An unbound
// placeholder is an error: a PUB sends only what is known.
func (v Vars) Fill(text string) (string, error) {
	var missing []string
	out := placeholder.ReplaceAllStringFunc(text, func(p string) string {
		name := p[1 : len(p)-1]
		val, ok := v[name]
		if !ok {
			missing = append(missing, p)
		}
		return val
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("%s not bound by an earlier MSG", strings.Join(missing, ", "))
	}
	return out, nil
}

// matchText matches got against pattern, whose placeholders match any
// non-empty text, binding those not bound yet into v. v is changed only
// when it matches.
func (v Vars) matchText(pattern, got string) bool {
	var re strings.Builder
	re.WriteString("^")
	var names []string
	last := 0
	for _, loc := range placeholder.FindAllStringSubmatchIndex(pattern, -1) {
		re.WriteString(regexp.QuoteMeta(pattern[last:loc[0]]))
		name := pattern[loc[2]:loc[3]]
		if val, ok := v[name]; ok {
			re.WriteString(regexp.QuoteMeta(val))
		} else {
			re.WriteString("(.+?)")
			names = append(names, name)
		}
		last = loc[1]
	}
	re.WriteString(regexp.QuoteMeta(pattern[last:]))
	re.WriteString("$")
	m := regexp.MustCompile(re.String()).FindStringSubmatch(got)
	if m == nil {
		return false
	}
	bound := map[string]string{}
	for i, name := range names {
		if prev, ok := bound[name]; ok && prev != m[i+1] {
			return false // one name, two values
		}
		bound[name] = m[i+1]
	}
	maps.Copy(v, bound)
	return true
}

// bare marks a placeholder that stands for a whole JSON value: it is
// written without quotes in the example, and read as a string holding
// this prefix and its name.
const bare = "\x00"

// more is the member a "…" becomes in a JSON object of an example.
const more = Ellipsis

var (
	ellipsisMember = regexp.MustCompile(`,\s*` + Ellipsis + `\s*}`)
	ellipsisOnly   = regexp.MustCompile(`{\s*` + Ellipsis + `\s*}`)
)

// exampleJSON reads the JSON of an example: bare placeholders become
// marked strings and a trailing "…" member becomes {"…": true}.
func exampleJSON(text string) (any, error) {
	text = ellipsisMember.ReplaceAllString(text, `,"`+more+`":true}`)
	text = ellipsisOnly.ReplaceAllString(text, `{"`+more+`":true}`)
	var b strings.Builder
	inString, escaped := false, false
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case inString:
			b.WriteByte(c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
			b.WriteByte(c)
		case c == '<':
			loc := placeholder.FindStringIndex(text[i:])
			if loc == nil || loc[0] != 0 {
				return nil, fmt.Errorf("stray %q in JSON", c)
			}
			b.WriteString(`"\u0000` + text[i:i+loc[1]] + `"`)
			i += loc[1] - 1
		default:
			b.WriteByte(c)
		}
	}
	return decodeJSON([]byte(b.String()))
}

func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return v, nil
}

// isJSON reports whether an example body is JSON rather than text.
func isJSON(body string) bool {
	return strings.HasPrefix(body, "{") || strings.HasPrefix(body, "[")
}

// mismatch says where a message departs from its example.
type mismatch struct {
	at        string // a JSON pointer, "" for the whole body
	want, got string
}

func (m *mismatch) Error() string {
	where := "the body"
	if m.at != "" {
		where = "at " + m.at
	}
	return fmt.Sprintf("%s the example says %s, the message has %s", where, m.want, m.got)
}

// matchJSON compares got with the example want, binding placeholders into
// v as they match. Objects must have the same members unless the example
// ends with "…"; arrays the same items in order; numbers the same value.
func (v Vars) matchJSON(want, got any, at string) error {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return &mismatch{at, "an object", show(got)}
		}
		_, open := w[more]
		for _, k := range slices.Sorted(maps.Keys(w)) {
			if k == more {
				continue
			}
			gv, ok := g[k]
			if !ok {
				return &mismatch{at + "/" + k, show(w[k]), "no such member"}
			}
			if err := v.matchJSON(w[k], gv, at+"/"+k); err != nil {
				return err
			}
		}
		if !open {
			for _, k := range slices.Sorted(maps.Keys(g)) {
				if _, ok := w[k]; !ok {
					return &mismatch{at + "/" + k, "no such member", show(g[k])}
				}
			}
		}
		return nil
	case []any:
		g, ok := got.([]any)
		if !ok {
			return &mismatch{at, "an array", show(got)}
		}
		if len(w) != len(g) {
			return &mismatch{at, fmt.Sprintf("%d items", len(w)), fmt.Sprintf("%d: %s", len(g), show(got))}
		}
		for i := range w {
			if err := v.matchJSON(w[i], g[i], fmt.Sprintf("%s/%d", at, i)); err != nil {
				return err
			}
		}
		return nil
	case string:
		if name, ok := strings.CutPrefix(w, bare); ok {
			text := show(got)
			if s, isString := got.(string); isString {
				text = s
			}
			if !v.matchText(name, text) {
				return &mismatch{at, name + " = " + v[name[1:len(name)-1]], show(got)}
			}
			return nil
		}
		g, ok := got.(string)
		if !ok || !v.matchText(w, g) {
			return &mismatch{at, show(want), show(got)}
		}
		return nil
	case json.Number:
		g, ok := got.(json.Number)
		if !ok || !sameNumber(w, g) {
			return &mismatch{at, w.String(), show(got)}
		}
		return nil
	default: // true, false, null
		if want != got {
			return &mismatch{at, show(want), show(got)}
		}
		return nil
	}
}

func sameNumber(a, b json.Number) bool {
	if a == b {
		return true
	}
	x, errX := a.Float64()
	y, errY := b.Float64()
	return errX == nil && errY == nil && x == y
}

func show(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(data)
}
