package persistence

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"time"
)

var (
	rawType  = reflect.TypeFor[json.RawMessage]()
	timeType = reflect.TypeFor[time.Time]()
)

// Shape describes the JSON shape of v's type: field names as encoded, their
// shapes, and which may be omitted. Two types with the same Shape store the
// same way.
func Shape(v any) string {
	var b strings.Builder
	writeShape(&b, reflect.TypeOf(v), map[reflect.Type]bool{})
	return b.String()
}

// Fingerprint is a short digest of a shape.
func Fingerprint(shape string) string {
	sum := sha256.Sum256([]byte(shape))
	return hex.EncodeToString(sum[:8])
}

// KindsShape describes a set of registered kind names.
func KindsShape(kinds []string) string {
	sorted := append([]string(nil), kinds...)
	sort.Strings(sorted)
	return "kinds[" + strings.Join(sorted, ",") + "]"
}

func writeShape(b *strings.Builder, t reflect.Type, seen map[reflect.Type]bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == rawType:
		b.WriteString("raw")
		return
	case t == timeType:
		b.WriteString("time")
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if seen[t] {
			b.WriteString(t.Name())
			return
		}
		seen[t] = true
		defer delete(seen, t)
		b.WriteString("{")
		first := true
		for f := range t.Fields() {
			name, omit, skip := jsonName(f)
			if skip {
				continue
			}
			if !first {
				b.WriteString(",")
			}
			first = false
			b.WriteString(name)
			if omit {
				b.WriteString("?")
			}
			b.WriteString(":")
			writeShape(b, f.Type, seen)
		}
		b.WriteString("}")
	case reflect.Slice, reflect.Array:
		b.WriteString("[")
		writeShape(b, t.Elem(), seen)
		b.WriteString("]")
	case reflect.Map:
		b.WriteString("map[")
		writeShape(b, t.Key(), seen)
		b.WriteString("]")
		writeShape(b, t.Elem(), seen)
	case reflect.Interface:
		b.WriteString("any")
	default:
		b.WriteString(t.Kind().String())
	}
}

func jsonName(f reflect.StructField) (name string, omit, skip bool) {
	if !f.IsExported() {
		return "", false, true
	}
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "", false, true
	}
	name, opts, _ := strings.Cut(tag, ",")
	if name == "" {
		name = f.Name
	}
	return name, strings.Contains(opts, "omit"), false
}
