// Package strictjson reads JSON that crossed a trust boundary as exactly
// one meaning. encoding/json matches an object's member names to struct
// fields case-insensitively, with Unicode folding ("ſession", with U+017F,
// fills Session), and lets the last of two members of one name win. A
// checker that looks at one spelling and a decoder that reads another then
// disagree on what was sent, and a token checked for one Session answers
// for another (issue 24). This package refuses such input before anything
// decodes it: every member name is exact, none appears twice in its
// object, and, against a Go type, none is a name the type does not have.
// encoding/json still does the decoding; once a body passes here it reads
// every member by its exact name, so both sides see the same thing.
package strictjson

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/holdover-dev/holdover"
)

// Check walks the JSON value data against t, the type it is about to be
// decoded into, and refuses with BAD_REQUEST any object, however deep, that
// names a member twice, and any member of a struct's object whose name is
// not exactly the JSON name of one of the struct's fields. The error names
// where the member is ("agent.session", "questions[1].label"). Below a
// json.RawMessage, an interface or a type that decodes itself, only
// duplicates are refused. Input that is not JSON passes, for the decoder
// to refuse with its own error.
func Check(data []byte, t reflect.Type) error {
	w := walker{dec: json.NewDecoder(bytes.NewReader(data))}
	w.dec.UseNumber()
	err := w.value(t, "")
	if err == errSyntax {
		return nil
	}
	return err
}

// Members decodes data, which must be one JSON object, into its members by
// exact name, refusing with BAD_REQUEST a name that appears twice or two
// names that differ only in case (under Unicode folding, as encoding/json
// compares them), since a decoder downstream may read either one for the
// other. The values are kept as they came, each one JSON value.
func Members(data []byte) (map[string]json.RawMessage, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(data, &members); err != nil || members == nil {
		return nil, holdover.New(holdover.CodeBadRequest, "not a JSON object")
	}
	if err := Check(data, nil); err != nil {
		return nil, err
	}
	folded := make(map[string]string, len(members))
	for name := range members {
		key := Fold(name)
		if other, clash := folded[key]; clash {
			a, b := min(name, other), max(name, other) // the same message every time
			return nil, holdover.Newf(holdover.CodeBadRequest, "members %q and %q differ only in case; names are exact", a, b)
		}
		folded[key] = name
	}
	return members, nil
}

// Fold maps s to a form in which two strings are equal exactly when
// strings.EqualFold says so, which is when encoding/json takes one for the
// other as a member name: each rune becomes the smallest of its
// simple-folding orbit ('ſ' and 's' become 'S', the Kelvin sign 'K').
func Fold(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		b.WriteRune(least)
	}
	return b.String()
}

// errSyntax stops the walk at input that is not JSON.
var errSyntax = holdover.New(holdover.CodeBadRequest, "not JSON")

type walker struct{ dec *json.Decoder }

// value checks the next JSON value against t (nil: any value).
func (w *walker) value(t reflect.Type, path string) error {
	tok, err := w.dec.Token()
	if err != nil {
		return errSyntax
	}
	t = shape(t)
	switch tok {
	case json.Delim('{'):
		return w.object(t, path)
	case json.Delim('['):
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for i := 0; w.dec.More(); i++ {
			if err := w.value(elem, path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
		if _, err := w.dec.Token(); err != nil {
			return errSyntax
		}
	}
	return nil
}

// object checks the members of an object whose '{' was just read.
func (w *walker) object(t reflect.Type, path string) error {
	var fields map[string]reflect.Type
	var elem reflect.Type
	if t != nil {
		switch t.Kind() {
		case reflect.Struct:
			fields = fieldsOf(t)
		case reflect.Map:
			elem = t.Elem()
		}
	}
	seen := make(map[string]struct{})
	for w.dec.More() {
		tok, err := w.dec.Token()
		name, ok := tok.(string)
		if err != nil || !ok {
			return errSyntax
		}
		at := join(path, name)
		if _, twice := seen[name]; twice {
			return holdover.Newf(holdover.CodeBadRequest, "request names the field %q twice", at)
		}
		seen[name] = struct{}{}
		ft := elem
		if fields != nil {
			if ft, ok = fields[name]; !ok {
				return holdover.Newf(holdover.CodeBadRequest, "request has an unknown field %q", at)
			}
		}
		if err := w.value(ft, at); err != nil {
			return err
		}
	}
	if _, err := w.dec.Token(); err != nil {
		return errSyntax
	}
	return nil
}

var (
	rawMessageType    = reflect.TypeFor[json.RawMessage]()
	unmarshalerType   = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// shape is the type whose members t's JSON is checked against: t without
// its pointers, or nil when any members go (a raw message, an interface,
// a type that decodes itself, a byte slice).
func shape(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == nil, t == rawMessageType, t.Kind() == reflect.Interface:
		return nil
	case reflect.PointerTo(t).Implements(unmarshalerType), reflect.PointerTo(t).Implements(textUnmarshalType):
		return nil
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
		return nil
	}
	return t
}

// fieldsOf maps the JSON names of t's fields to their types, as
// encoding/json names them, computed once per type.
func fieldsOf(t reflect.Type) map[string]reflect.Type {
	if f, ok := fieldCache.Load(t); ok {
		return f.(map[string]reflect.Type)
	}
	f := jsonFields(t)
	fieldCache.Store(t, f)
	return f
}

var fieldCache sync.Map // reflect.Type → map[string]reflect.Type

// jsonFields maps the JSON names of t's fields to their types, promoting
// the fields of untagged embedded structs unless an outer field has the
// same name, as encoding/json does.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	fields := make(map[string]reflect.Type)
	var embedded []reflect.Type
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				embedded = append(embedded, ft)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" || !validName(name) {
			name = f.Name
		}
		fields[name] = f.Type
	}
	for _, e := range embedded {
		for name, ft := range jsonFields(e) {
			if _, shadowed := fields[name]; !shadowed {
				fields[name] = ft
			}
		}
	}
	return fields
}

// validName is encoding/json's rule for a tag name it honours.
func validName(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
