// Package schemas holds the machine-readable contract of what Holdover
// writes and reads on NATS: one JSON Schema (2020-12) file per shape, in
// this folder, and the validation of documents against them.
//
// The files are the source of truth for runtimes in other languages and
// for the web Client's generated types; the Go types are kept in step with
// them by this package's tests, which fail when a field is added, removed
// or made optional on one side only. Validation uses a maintained JSON
// Schema implementation, never checks written by hand.
//
// Layout: event.json is the Session log envelope {type, at, data}; the
// bodies it names are in events/, one file per event type (the type with
// "/" spelled "-"), and the shapes several bodies share in
// events/common.json. The rest of the wire is in a folder named for where
// each shape travels: requests/, replies/, frames/, waterfall/, kv/,
// inbox/ and tool/, with common/ for what they share; websocket/ holds the
// frames of the Client-gateway WebSocket. README.md has the table.
package schemas

import (
	"bytes"
	"embed"
	"io/fs"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/holdover-dev/holdover"
)

// EventSchema names the Session log envelope, which dispatches to the body
// schema of each event type Holdover reads.
const EventSchema = "event.json"

//go:embed *.json events/*.json common/*.json requests/*.json replies/*.json frames/*.json waterfall/*.json kv/*.json websocket/*.json websocket/client/*.json websocket/gateway/*.json inbox/*.json tool/*.json
var files embed.FS

// Files is the schema folder, as embedded in the binary.
func Files() fs.FS { return files }

// base is the URL the files are known under while compiling: relative
// $refs between them resolve against it, and nothing is fetched.
const base = "holdover:///"

// folder is every schema of the folder, loaded into one compiler once;
// each is compiled the first time it is asked for (compile), so a process
// that validates one shape (the fold's ask arguments) pays for that shape
// and what it refers to, not for the whole folder.
type folder struct {
	names []string // sorted

	mu       sync.Mutex // the compiler is not safe for concurrent use
	compiler *jsonschema.Compiler
	compiled sync.Map // name → *jsonschema.Schema
}

var loaded = sync.OnceValues(func() (*folder, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	var names []string
	err := fs.WalkDir(files, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".json") {
			return err
		}
		data, err := files.ReadFile(path)
		if err != nil {
			return err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			return holdover.Wrapf(err, holdover.CodeInternal, "schema %s is not JSON", path)
		}
		names = append(names, path)
		return c.AddResource(base+path, doc)
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	return &folder{names: names, compiler: c}, nil
})

// compile returns the compiled schema file name, compiling it the first
// time; an unknown name is an INTERNAL error.
func (f *folder) compile(name string) (*jsonschema.Schema, error) {
	if s, ok := f.compiled.Load(name); ok {
		return s.(*jsonschema.Schema), nil
	}
	if _, found := slices.BinarySearch(f.names, name); !found {
		return nil, holdover.Newf(holdover.CodeInternal, "no schema %q in the schema folder", name)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s, err := f.compiler.Compile(base + name)
	if err != nil {
		return nil, holdover.Wrapf(err, holdover.CodeInternal, "compile schema %s", name)
	}
	f.compiled.Store(name, s)
	return s, nil
}

// Names lists the schema files, sorted, each of which compiles.
func Names() []string {
	f, err := loaded()
	if err != nil {
		return nil
	}
	for _, name := range f.names {
		if _, err := f.compile(name); err != nil {
			return nil
		}
	}
	return slices.Clone(f.names)
}

// Problem is one way a document breaks its schema.
type Problem struct {
	// At is a JSON pointer to the offending value, "" for the whole document.
	At string
	// Message says what is wrong, in the validator's words.
	Message string
}

func (p Problem) String() string {
	if p.At == "" {
		return p.Message
	}
	return p.At + ": " + p.Message
}

// Validate checks the JSON document data against the schema file name
// (such as EventSchema) and returns every problem found, none when it
// fits. An unknown schema name is an INTERNAL error; a document that is
// not JSON is a problem of its own.
func Validate(name string, data []byte) ([]Problem, error) {
	f, err := loaded()
	if err != nil {
		return nil, err
	}
	s, err := f.compile(name)
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return []Problem{{Message: "not JSON: " + err.Error()}}, nil
	}
	verr := s.Validate(doc)
	if verr == nil {
		return nil, nil
	}
	ve, ok := verr.(*jsonschema.ValidationError)
	if !ok {
		return []Problem{{Message: verr.Error()}}, nil
	}
	return leaves(ve, nil), nil
}

// english prints the validator's messages.
var english = message.NewPrinter(language.English)

// leaves flattens a validation error to the causes that say something:
// those with no causes of their own ("allOf failed" or a failed $ref says
// only that a cause below it failed). Each is said once.
func leaves(e *jsonschema.ValidationError, out []Problem) []Problem {
	if len(e.Causes) > 0 {
		for _, c := range e.Causes {
			out = leaves(c, out)
		}
		return out
	}
	p := Problem{At: pointer(e.InstanceLocation), Message: e.ErrorKind.LocalizedString(english)}
	if !slices.Contains(out, p) {
		out = append(out, p)
	}
	return out
}

// pointer spells an instance location as a JSON pointer (RFC 6901).
func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(t))
	}
	return b.String()
}
