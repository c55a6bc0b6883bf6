package schemas_test

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/clientwire"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/liveroot"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/runtime"
	"github.com/holdover-dev/holdover/schemas"
	"github.com/holdover-dev/holdover/userquestions"
)

// The Go types of package events and the schema files must describe the
// same JSON, field for field: a field added, removed, renamed or made
// optional on one side only fails here. The rules:
//
//   - a struct is an object schema with exactly its JSON field names as
//     properties, additionalProperties false, and as required exactly the
//     fields Go always writes (those without omitempty);
//   - a slice is an array schema; one Go can write as null (a nil slice
//     encodes as null, unless its type's MarshalJSON writes [] instead, as
//     holdover.Answer, Batch and projection.View do) allows null;
//   - strings, integers (unsigned: a minimum of 0 or more), booleans and
//     times (format date-time) have their JSON types; json.RawMessage is
//     any JSON.

func TestEveryEventTypeHasASchema(t *testing.T) {
	docs := loadDocs(t)
	var described []string
	for typ := range dispatch(t, docs) {
		described = append(described, typ)
	}
	sort.Strings(described)
	var known []string
	for _, typ := range events.Types() {
		known = append(known, string(typ))
	}
	require.Equal(t, known, described, "event.json must dispatch every type package events decodes, and no other")
}

// shapes pairs each schema file that describes one Go type with it. The
// event bodies are paired through event.json's dispatch instead (below),
// and the WebSocket frames through package clientwire's catalog (appended
// by wsFrameShapes). A schema for a request, reply, frame, KV value or
// inbox message slots in here with its Go type; TestEverySchemaIsPaired
// keeps the list whole.
var shapes = append([]shape{
	{schemas.EventSchema, reflect.TypeFor[events.Event]()},
	{"requests/ask.json", reflect.TypeFor[holdover.AskRequest]()},
	{"requests/ask-timed.json", reflect.TypeFor[holdover.AskTimedRequest]()},
	{"requests/answer.json", reflect.TypeFor[holdover.AnswerRequest]()},
	{"requests/view.json", reflect.TypeFor[userquestions.ViewRequest]()},
	{"requests/inflight.json", reflect.TypeFor[userquestions.InflightRequest]()},
	{"requests/resume.json", reflect.TypeFor[liveroot.ResumeRequest]()},
	{"requests/discard.json", reflect.TypeFor[runtime.DiscardRequest]()},
	{"replies/ask.json", reflect.TypeFor[holdover.Batch]()},
	{"replies/ask-timed.json", reflect.TypeFor[holdover.Outcome]()},
	{"replies/answer.json", reflect.TypeFor[holdover.AnswerResult]()},
	{"replies/view.json", reflect.TypeFor[projection.View]()},
	{"replies/inflight.json", reflect.TypeFor[userquestions.InflightResult]()},
	{"replies/error.json", reflect.TypeFor[holdover.Error]()},
	{"replies/resume.json", reflect.TypeFor[liveroot.ResumeReply]()},
	{"replies/discard.json", reflect.TypeFor[runtime.DiscardReply]()},
	{"frames/accepted.json", reflect.TypeFor[userquestions.Accepted]()},
	{"frames/claim.json", reflect.TypeFor[userquestions.ClaimFrame]()},
	{"waterfall/request.json", reflect.TypeFor[userquestions.WaterfallRequest]()},
	{"waterfall/outcome.json", reflect.TypeFor[userquestions.WaterfallOutcome]()},
	{"waterfall/cancel.json", reflect.TypeFor[userquestions.CancelNotice]()},
	{"kv/live-root.json", reflect.TypeFor[liveroot.Record]()},
	{"kv/user-questions.json", reflect.TypeFor[projection.View]()},
	{"inbox/message.json", reflect.TypeFor[events.Message]()},
	{"inbox/reply-text.json", reflect.TypeFor[events.Reply]()},
	{"tool/arguments.json", reflect.TypeFor[holdover.ToolArgs]()},
	{"tool/answers.json", reflect.TypeFor[holdover.Batch]()},
	{"tool/pending.json", reflect.TypeFor[holdover.Pending]()},
}, wsFrameShapes()...)

type shape struct {
	file string
	typ  reflect.Type
}

// wsFrameShapes pairs the schema of every frame of the Client-gateway
// WebSocket protocol with its Go type.
func wsFrameShapes() []shape {
	var out []shape
	for _, s := range slices.Concat(clientwire.ClientFrames(), clientwire.GatewayFrames()) {
		out = append(out, shape{s.Schema(), reflect.TypeOf(s.Zero)})
	}
	return out
}

// Every schema file is the schema of a Go type (paired above or through
// event.json's dispatch) or a file of shared definitions, so none can
// drift unwatched.
func TestEverySchemaIsPaired(t *testing.T) {
	docs := loadDocs(t)
	paired := map[string]bool{}
	for _, s := range shapes {
		paired[s.file] = true
	}
	for _, ref := range dispatch(t, docs) {
		paired[ref] = true
	}
	for name, doc := range docs {
		if _, defsOnly := doc.(map[string]any)["$defs"]; defsOnly && doc.(map[string]any)["type"] == nil && doc.(map[string]any)["$ref"] == nil {
			continue // shared definitions, checked where they are used
		}
		assert.True(t, paired[name], "schema %s is paired with no Go type in shapes", name)
	}
}

func TestShapesMatchTheirSchemas(t *testing.T) {
	docs := loadDocs(t)
	for _, s := range shapes {
		t.Run(s.file, func(t *testing.T) {
			require.Contains(t, docs, s.file)
			c := comparison{t: t, docs: docs}
			c.compare(s.file, docs[s.file], s.typ, s.typ.String())
		})
	}
}

func TestEventBodiesMatchTheirSchemas(t *testing.T) {
	docs := loadDocs(t)
	for typ, ref := range dispatch(t, docs) {
		t.Run(strings.ReplaceAll(typ, "/", "-"), func(t *testing.T) {
			body, ok := events.NewBody(events.Type(typ))
			require.True(t, ok)
			c := comparison{t: t, docs: docs}
			file, node := c.resolve(schemas.EventSchema, map[string]any{"$ref": ref})
			c.compare(file, node, reflect.TypeOf(body).Elem(), typ)
		})
	}
}

// The comparison catches a drift in the schema files as well as in Go.
func TestComparisonCatchesADrift(t *testing.T) {
	docs := loadDocs(t)
	type drifted struct {
		Turn   string `json:"turn"`
		Extra  int    `json:"extra,omitempty"` // not in the schema
		Reason string `json:"reason"`          // optional in the schema
	}
	rec := &recorder{}
	c := comparison{t: rec, docs: docs}
	c.compare("events/turn-end.json", docs["events/turn-end.json"], reflect.TypeFor[drifted](), "drifted")
	joined := strings.Join(rec.errors, "\n")
	assert.Contains(t, joined, `Go field Extra ("extra") has no schema property`)
	assert.Contains(t, joined, "schema requires [turn]; Go always writes [reason turn]")
}

type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, strings.TrimSpace(fmt.Sprintf(format, args...)))
}

// comparison walks a Go type and a schema node side by side.
type comparison struct {
	t    testing.TB
	docs map[string]any
}

func (c comparison) compare(file string, node any, typ reflect.Type, where string) {
	c.t.Helper()
	file, node = c.resolve(file, node)
	s, ok := node.(map[string]any)
	if !ok {
		c.t.Errorf("%s: schema is not an object", where)
		return
	}
	// A pointer reads null as nil, as if the field were absent, so its
	// schema may allow null (ToolArgs.Timeout, which models send as null).
	pointer := typ.Kind() == reflect.Pointer
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	scalar := func(jsonType string) []string {
		if pointer {
			return []string{jsonType, "null"}
		}
		return []string{jsonType}
	}
	switch {
	case typ == reflect.TypeFor[json.RawMessage]():
		return // any JSON; the schema may narrow it
	case typ == reflect.TypeFor[time.Time]():
		c.wantType(s, where, "string")
		if s["format"] != "date-time" {
			c.t.Errorf("%s: a time has format date-time", where)
		}
		return
	}
	switch typ.Kind() {
	case reflect.Struct:
		c.compareObject(file, s, typ, where)
	case reflect.Slice:
		c.wantType(s, where, "array", "null")
		c.compare(file, s["items"], typ.Elem(), where+"[]")
	case reflect.Map:
		// A map of string keys is an object whose every member is the
		// value's schema; omitempty leaves a nil one out.
		c.wantType(s, where, "object")
		if typ.Key().Kind() != reflect.String {
			c.t.Errorf("%s: a map's keys are strings in JSON", where)
		}
		c.compare(file, s["additionalProperties"], typ.Elem(), where+"{}")
	case reflect.String:
		if _, enum := s["enum"]; !enum {
			c.wantType(s, where, scalar("string")...)
		}
	case reflect.Bool:
		c.wantType(s, where, scalar("boolean")...)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		c.wantType(s, where, scalar("integer")...)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		c.wantType(s, where, scalar("integer")...)
		if m, _ := s["minimum"].(float64); m < 0 || s["minimum"] == nil {
			c.t.Errorf("%s: an unsigned integer has a minimum of 0 or more", where)
		}
	default:
		c.t.Errorf("%s: no rule for Go kind %s", where, typ.Kind())
	}
}

// compareObject checks properties, required and closedness, then each
// field. A non-omitempty slice must allow null; an omitempty one need not.
func (c comparison) compareObject(file string, s map[string]any, typ reflect.Type, where string) {
	c.t.Helper()
	c.wantType(s, where, "object")
	if s["additionalProperties"] != false {
		c.t.Errorf("%s: the schema must set additionalProperties false", where)
	}
	props, _ := s["properties"].(map[string]any)
	var goFields, goRequired []string
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, omitempty, ok := jsonField(f)
		if !ok {
			continue
		}
		goFields = append(goFields, name)
		if !omitempty {
			goRequired = append(goRequired, name)
		}
		prop, ok := props[name]
		if !ok {
			c.t.Errorf("%s: Go field %s (%q) has no schema property", where, f.Name, name)
			continue
		}
		fieldFile, fieldNode := c.resolve(file, prop)
		if f.Type.Kind() == reflect.Slice && f.Type != reflect.TypeFor[json.RawMessage]() && !omitempty && writesNull(typ, name) {
			if fs, _ := fieldNode.(map[string]any); !slices.Contains(types(fs), "null") {
				c.t.Errorf("%s.%s: Go writes a nil slice as null, so the schema must allow null", where, name)
			}
		}
		c.compare(fieldFile, fieldNode, f.Type, where+"."+name)
	}
	for name := range props {
		if !slices.Contains(goFields, name) {
			c.t.Errorf("%s: schema property %q has no Go field", where, name)
		}
	}
	var required []string
	for _, r := range asList(s["required"]) {
		required = append(required, r.(string))
	}
	sort.Strings(required)
	sort.Strings(goRequired)
	if !slices.Equal(required, goRequired) {
		c.t.Errorf("%s: schema requires %v; Go always writes %v (the fields without omitempty): they must be the same", where, required, goRequired)
	}
}

func (c comparison) wantType(s map[string]any, where string, allowed ...string) {
	c.t.Helper()
	got := types(s)
	if len(got) == 0 || !slices.Contains(got, allowed[0]) {
		c.t.Errorf("%s: schema type %v, want %s", where, got, allowed[0])
		return
	}
	for _, g := range got {
		if !slices.Contains(allowed, g) {
			c.t.Errorf("%s: schema type %v allows %s, which Go does not write", where, got, g)
		}
	}
}

// resolve follows $refs (relative to file, with an optional #/… pointer)
// to the node they name and the file it is in.
func (c comparison) resolve(file string, node any) (string, any) {
	c.t.Helper()
	for {
		s, ok := node.(map[string]any)
		if !ok {
			return file, node
		}
		ref, ok := s["$ref"].(string)
		if !ok {
			return file, node
		}
		target, pointer, _ := strings.Cut(ref, "#")
		if target != "" {
			file = path.Join(path.Dir(file), target)
		}
		node = c.docs[file]
		if node == nil {
			c.t.Fatalf("$ref %q names no schema file %s", ref, file)
		}
		for _, tok := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
			if tok != "" {
				node = node.(map[string]any)[tok]
			}
		}
	}
}

func types(s map[string]any) []string {
	switch v := s["type"].(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, x := range v {
			out = append(out, x.(string))
		}
		return out
	}
	return nil
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// writesNull reports whether Go writes the field name of a zero typ as
// null: a nil slice does, unless the type's MarshalJSON writes [].
func writesNull(typ reflect.Type, name string) bool {
	data, err := json.Marshal(reflect.Zero(typ).Interface())
	if err != nil {
		return true
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(data, &fields) != nil {
		return true
	}
	return string(fields[name]) == "null"
}

// jsonField returns a struct field's JSON name and whether it is
// omitempty; ok is false for a field JSON skips.
func jsonField(f reflect.StructField) (name string, omitempty, ok bool) {
	if !f.IsExported() {
		return "", false, false
	}
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "", false, false
	}
	name, opts, _ := strings.Cut(tag, ",")
	if name == "" {
		name = f.Name
	}
	return name, slices.Contains(strings.Split(opts, ","), "omitempty"), true
}

// dispatch maps each event type event.json names to the $ref of its body.
func dispatch(t testing.TB, docs map[string]any) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, branch := range asList(docs[schemas.EventSchema].(map[string]any)["allOf"]) {
		b := branch.(map[string]any)
		typ := b["if"].(map[string]any)["properties"].(map[string]any)["type"].(map[string]any)["const"].(string)
		ref := b["then"].(map[string]any)["properties"].(map[string]any)["data"].(map[string]any)["$ref"].(string)
		out[typ] = ref
	}
	return out
}

// loadDocs parses every schema file of the folder.
func loadDocs(t testing.TB) map[string]any {
	t.Helper()
	docs := map[string]any{}
	require.NoError(t, fs.WalkDir(schemas.Files(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(schemas.Files(), p)
		if err != nil {
			return err
		}
		var doc any
		if err := json.Unmarshal(data, &doc); err != nil {
			return err
		}
		docs[p] = doc
		return nil
	}))
	return docs
}
