package userquestions

import (
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// unknownField returns the path of the first member of the JSON object
// data that v, a pointer to the Go value it decodes into, has no field for,
// as "agent.session" or "questions[1].label"; "" when every member is
// known. encoding/json refuses such a member but names only its key; this
// names where it is, so the sender can tell a misplaced field from a
// misspelt one. It matches keys as encoding/json does (a field's exact
// name first, then case-insensitively) and descends into structs, slices,
// arrays, maps and pointers; a json.RawMessage takes anything.
func unknownField(data []byte, v any) string {
	return unknownIn(data, reflect.TypeOf(v), "")
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

func unknownIn(data []byte, t reflect.Type, path string) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t == rawMessageType {
		return ""
	}
	switch t.Kind() {
	case reflect.Struct:
		var members map[string]json.RawMessage
		if json.Unmarshal(data, &members) != nil {
			return ""
		}
		fields := jsonFields(t)
		keys := make([]string, 0, len(members))
		for k := range members {
			keys = append(keys, k)
		}
		slices.Sort(keys) // the same answer every time
		for _, k := range keys {
			ft, ok := fieldFor(fields, k)
			if !ok {
				return join(path, k)
			}
			if p := unknownIn(members[k], ft, join(path, k)); p != "" {
				return p
			}
		}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "" // bytes are a string
		}
		var items []json.RawMessage
		if json.Unmarshal(data, &items) != nil {
			return ""
		}
		for i, item := range items {
			if p := unknownIn(item, t.Elem(), path+"["+strconv.Itoa(i)+"]"); p != "" {
				return p
			}
		}
	case reflect.Map:
		var members map[string]json.RawMessage
		if json.Unmarshal(data, &members) != nil {
			return ""
		}
		for k, m := range members {
			if p := unknownIn(m, t.Elem(), join(path, k)); p != "" {
				return p
			}
		}
	}
	return ""
}

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
		if name == "" {
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

func fieldFor(fields map[string]reflect.Type, key string) (reflect.Type, bool) {
	if ft, ok := fields[key]; ok {
		return ft, true
	}
	for name, ft := range fields {
		if strings.EqualFold(name, key) {
			return ft, true
		}
	}
	return nil, false
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
