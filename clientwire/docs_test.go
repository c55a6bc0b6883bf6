package clientwire_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/clientwire"
	"github.com/holdover-dev/holdover/schemas"
)

// protocolDoc is the Client protocol's reference, docs/protocol.md.
var protocolDoc = filepath.Join("..", "docs", "protocol.md")

// docFrame is one frame an example of docs/protocol.md shows.
type docFrame struct {
	line   int    // the line of its block's fence
	text   string // as the example writes it, ellipses marked
	elided bool   // the example leaves members or values out ("…")
}

// The examples of docs/protocol.md show every frame of both sides, and
// each fits its schema: a frame added to the wire without an example in
// the docs, or an example that drifts from the wire, fails here. An
// example that leaves something out ("…") is held to its type and to
// member names its schema knows.
func TestProtocolDocShowsEveryFrame(t *testing.T) {
	shown := map[string]bool{} // schema file → an example fits it
	for _, f := range docFrames(t) {
		var head clientwire.Head
		require.NoError(t, json.Unmarshal([]byte(f.text), &head), "docs/protocol.md:%d: %s", f.line, f.text)
		var fits []string
		var problems []string
		for _, spec := range slices.Concat(clientwire.ClientFrames(), clientwire.GatewayFrames()) {
			if spec.Type != head.Type {
				continue
			}
			p := exampleProblems(t, spec.Schema(), f)
			if len(p) == 0 {
				fits = append(fits, spec.Schema())
				shown[spec.Schema()] = true
			}
			problems = append(problems, p...)
		}
		assert.NotEmpty(t, fits, "docs/protocol.md:%d: the %q frame fits no frame's schema: %s\n%s", f.line, head.Type, strings.Join(problems, "; "), f.text)
	}
	for _, spec := range slices.Concat(clientwire.ClientFrames(), clientwire.GatewayFrames()) {
		assert.True(t, shown[spec.Schema()], "docs/protocol.md shows no %s frame that fits %s", spec.Type, spec.Schema())
	}
}

// Every code and close code package clientwire declares is in
// docs/protocol.md, where a Client author looks it up.
func TestProtocolDocNamesEveryCode(t *testing.T) {
	doc, err := os.ReadFile(protocolDoc)
	require.NoError(t, err)
	codes, closes := declaredCodes(t)
	require.Contains(t, codes, string(clientwire.CodeUnauthorized), "the scan of the package's constants misses a code it must find")
	for _, c := range codes {
		assert.True(t, bytes.Contains(doc, []byte("`"+c+"`")), "code %s is in clientwire but not in docs/protocol.md", c)
	}
	for _, c := range closes {
		assert.True(t, bytes.Contains(doc, []byte("| "+c+" |")), "close code %s is in clientwire but not in docs/protocol.md's table of closes", c)
	}
}

// The web Client declares the protocol's names for itself
// (web/src/protocol/frames.ts); they are the wire's.
func TestTheWebClientNamesWhatTheWireNames(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "web", "src", "protocol", "frames.ts"))
	require.NoError(t, err)
	for _, want := range []string{
		fmt.Sprintf("protocolVersion = %d ", clientwire.ProtocolVersion),
		strconv.Quote(clientwire.QuestionRequestEvent),
		strconv.Quote(clientwire.MethodAnswer),
		strconv.Quote(clientwire.MethodAttachWait),
		strconv.Quote(clientwire.MethodDiscard),
	} {
		assert.Contains(t, string(src), want)
	}
}

// exampleProblems checks one example frame against schema file name.
func exampleProblems(t *testing.T, name string, f docFrame) []string {
	t.Helper()
	if !f.elided {
		problems, err := schemas.Validate(name, []byte(f.text))
		require.NoError(t, err)
		var out []string
		for _, p := range problems {
			out = append(out, name+": "+p.String())
		}
		return out
	}
	doc, err := fs(name)
	require.NoError(t, err)
	var members map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(f.text), &members))
	var out []string
	for m := range members {
		if _, known := doc.Properties[m]; !known && m != elided {
			out = append(out, fmt.Sprintf("%s: no member %q", name, m))
		}
	}
	return out
}

// ellipsis is what an example writes for what it leaves out, and elided
// what the test reads it as: a member or an element.
const (
	ellipsis = "…"
	elided   = "(elided)"
)

// schemaDoc is what exampleProblems reads of a schema.
type schemaDoc struct {
	Properties map[string]json.RawMessage `json:"properties"`
}

func fs(name string) (schemaDoc, error) {
	var d schemaDoc
	data, err := os.ReadFile(filepath.Join("..", "schemas", name))
	if err != nil {
		return d, err
	}
	return d, json.Unmarshal(data, &d)
}

var (
	fence       = regexp.MustCompile("(?ms)^```json\\n(.*?)^```")
	elidedValue = regexp.MustCompile(`([{\[])\s*…\s*([}\]])`) // {…} or […]
	elidedTail  = regexp.MustCompile(`,\s*…\s*}`)             // ,…}
)

// docFrames returns every frame the json blocks of docs/protocol.md show,
// one JSON object a frame, or an array of them (a batched message). "…"
// standing for a value or for members becomes an elided member or
// element; "…" in a string is text.
func docFrames(t *testing.T) []docFrame {
	t.Helper()
	doc, err := os.ReadFile(protocolDoc)
	require.NoError(t, err)
	var out []docFrame
	for _, loc := range fence.FindAllSubmatchIndex(doc, -1) {
		line := bytes.Count(doc[:loc[0]], []byte("\n")) + 1
		text := string(doc[loc[2]:loc[3]])
		text = elidedValue.ReplaceAllString(text, `$1"`+elided+`"$2`)
		text = strings.ReplaceAll(text, `{"`+elided+`"}`, `{"`+elided+`":true}`)
		text = elidedTail.ReplaceAllString(text, `,"`+elided+`":true}`)
		dec := json.NewDecoder(strings.NewReader(text))
		for {
			var v any
			err := dec.Decode(&v)
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err, "docs/protocol.md:%d: a json block that is not JSON", line)
			values := []any{v}
			if list, ok := v.([]any); ok {
				values = list
			}
			for _, v := range values {
				obj, ok := v.(map[string]any)
				if _, typed := obj["type"]; !ok || !typed {
					continue // not a frame: a token's header or claims
				}
				data, err := json.Marshal(obj)
				require.NoError(t, err)
				out = append(out, docFrame{line: line, text: string(data), elided: strings.Contains(string(data), `"`+elided+`"`)})
			}
		}
	}
	require.NotEmpty(t, out, "docs/protocol.md shows no frame")
	return out
}

// declaredCodes returns the values of the package's holdover.Code
// constants and of its Close constants, as the source spells them.
func declaredCodes(t *testing.T) (codes, closes []string) {
	t.Helper()
	fset := token.NewFileSet()
	matches, err := filepath.Glob("*.go")
	require.NoError(t, err)
	for _, path := range matches {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		for _, decl := range f.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.CONST {
				continue
			}
			for _, spec := range gen.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok {
						continue
					}
					switch {
					case strings.HasPrefix(name.Name, "Code") && lit.Kind == token.STRING:
						v, err := strconv.Unquote(lit.Value)
						require.NoError(t, err)
						codes = append(codes, v)
					case strings.HasPrefix(name.Name, "Close") && lit.Kind == token.INT:
						closes = append(closes, lit.Value)
					}
				}
			}
		}
	}
	return codes, closes
}
