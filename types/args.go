package types

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/internal/jsonx"
)

// DecodeArgs decodes a tool call's JSON arguments into v, a non-nil
// pointer, as a Tool made by NewTool decodes them before calling its
// function, so that code deciding on the arguments (an approval step, a
// policy) reads exactly the values the tool runs with:
//
//   - data is one JSON value, nothing after it; an object giving one key
//     twice with different values is an error matching
//     adapter.ErrAmbiguous (encoding/json would keep the last);
//   - in every JSON object decoded into a struct, at any depth, each key
//     must be the name of one of the struct's fields exactly as
//     encoding/json names it: the json tag's name, or the Go field name
//     for a field without one (fields of embedded structs included). Any
//     other key, a case or folding variant of a name included, is an error
//     matching ErrArgumentName that names it (and the name it resembles);
//   - then data is decoded with encoding/json, unknown fields refused.
//
// Map keys are data, not names, and are kept as written; values of types
// that decode themselves (json.Unmarshaler, encoding.TextUnmarshaler) and
// of interface types are not looked into.
func DecodeArgs(data []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("types: DecodeArgs needs a non-nil pointer, not %T", v)
	}
	tree, err := jsonx.Decode(string(bytes.TrimSpace(data)))
	if err != nil {
		var dup *jsonx.DuplicateKeyError
		if errors.As(err, &dup) {
			return fmt.Errorf("%w: %w", adapter.ErrAmbiguous, err)
		}
		return err
	}
	if err := checkNames(tree, rv.Type().Elem(), "", 0); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// maxNameDepth bounds the nesting checkNames follows (jsonx.Decode bounds
// the JSON's own nesting; this bounds self-referential types).
const maxNameDepth = 10000

// checkNames reports the first key, in any object of v (decoded JSON)
// that encoding/json would decode into a struct of type t, that is not
// exactly the name of one of that struct's fields.
func checkNames(v any, t reflect.Type, path string, depth int) error {
	if depth > maxNameDepth {
		return nil
	}
	for t.Kind() == reflect.Pointer {
		if t.Elem() == t {
			return nil
		}
		t = t.Elem()
	}
	if t.Kind() == reflect.Interface || reflect.PointerTo(t).Implements(jsonUnmarshalerType) ||
		reflect.PointerTo(t).Implements(textUnmarshalerType) {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return nil // not an object: encoding/json says so
		}
		names := structNames(t)
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		at := func(k string) string {
			if path == "" {
				return k
			}
			return path + "." + k
		}
		for _, k := range keys {
			if ft, ok := names.exact[k]; ok {
				if err := checkNames(obj[k], ft, at(k), depth+1); err != nil {
					return err
				}
				continue
			}
			like := names.folded[foldName(k)]
			for _, name := range like {
				if _, both := obj[name]; both {
					return fmt.Errorf("%w: the keys %q and %q both name the argument %q: give it once, spelled exactly",
						ErrArgumentName, at(name), at(k), at(name))
				}
			}
			if len(like) > 0 {
				return fmt.Errorf("%w: %q is not an argument (did you mean %q? names are matched exactly)", ErrArgumentName, at(k), at(like[0]))
			}
			return fmt.Errorf("%w: %q is not an argument (the arguments are %s)", ErrArgumentName, at(k), names.list)
		}
	case reflect.Map:
		if obj, ok := v.(map[string]any); ok {
			for _, k := range slices.Sorted(maps.Keys(obj)) { // the same error every time
				if err := checkNames(obj[k], t.Elem(), path+"["+strconv.Quote(k)+"]", depth+1); err != nil {
					return err
				}
			}
		}
	case reflect.Slice, reflect.Array:
		if list, ok := v.([]any); ok {
			for i, e := range list {
				if err := checkNames(e, t.Elem(), path+"["+strconv.Itoa(i)+"]", depth+1); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// argNames are the JSON names of a struct's fields, as encoding/json
// decodes them.
type argNames struct {
	exact  map[string]reflect.Type // name → field type
	folded map[string][]string     // foldName(name) → the names
	list   string                  // the names, quoted, for errors
}

var namesCache sync.Map // reflect.Type → *argNames

// structNames returns the JSON names of struct type t's fields by
// encoding/json's rules: exported fields (and embedded structs, exported
// or not), named by a valid json tag or else the Go name, "-" skipped;
// an embedded struct without a tag name promotes its fields; among fields
// of one name the shallowest wins, and at one depth the only tagged one,
// otherwise none.
func structNames(t reflect.Type) *argNames {
	if n, ok := namesCache.Load(t); ok {
		return n.(*argNames)
	}
	type field struct {
		name   string
		typ    reflect.Type
		tagged bool
		depth  int
	}
	var fields []field
	next := []reflect.Type{t}
	nextCount := map[reflect.Type]int{t: 1}
	visited := map[reflect.Type]bool{}
	for depth := 0; len(next) > 0; depth++ {
		current, count := next, nextCount
		next, nextCount = nil, map[reflect.Type]int{}
		for _, st := range current {
			if visited[st] {
				continue
			}
			visited[st] = true
			for i := range st.NumField() {
				sf := st.Field(i)
				if sf.Anonymous {
					et := sf.Type
					if et.Kind() == reflect.Pointer {
						et = et.Elem()
					}
					if !sf.IsExported() && et.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, _, _ := strings.Cut(tag, ",")
				if !validTag(name) {
					name = ""
				}
				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if name != "" || !sf.Anonymous || ft.Kind() != reflect.Struct {
					f := field{name: name, typ: sf.Type, tagged: name != "", depth: depth}
					if f.name == "" {
						f.name = sf.Name
					}
					fields = append(fields, f)
					if count[st] > 1 {
						// The struct appears twice at this depth: its
						// fields annihilate, as in encoding/json.
						fields = append(fields, f)
					}
					continue
				}
				nextCount[ft]++
				if nextCount[ft] == 1 {
					next = append(next, ft)
				}
			}
		}
	}
	byName := map[string][]field{}
	var order []string
	for _, f := range fields {
		if _, ok := byName[f.name]; !ok {
			order = append(order, f.name)
		}
		byName[f.name] = append(byName[f.name], f)
	}
	n := &argNames{exact: map[string]reflect.Type{}, folded: map[string][]string{}}
	var quoted []string
	for _, name := range order {
		fs := byName[name]
		top := fs[0].depth
		for _, f := range fs {
			top = min(top, f.depth)
		}
		var at []field
		tagged := 0
		for _, f := range fs {
			if f.depth == top {
				at = append(at, f)
				if f.tagged {
					tagged++
				}
			}
		}
		var win *field
		switch {
		case len(at) == 1:
			win = &at[0]
		case tagged == 1:
			for i := range at {
				if at[i].tagged {
					win = &at[i]
				}
			}
		}
		if win == nil {
			continue // ambiguous: encoding/json ignores the name
		}
		n.exact[name] = win.typ
		n.folded[foldName(name)] = append(n.folded[foldName(name)], name)
		quoted = append(quoted, strconv.Quote(name))
	}
	if len(quoted) == 0 {
		n.list = "none"
	} else {
		n.list = strings.Join(quoted, ", ")
	}
	actual, _ := namesCache.LoadOrStore(t, n)
	return actual.(*argNames)
}

// validTag reports whether a json tag's name is one encoding/json uses.
func validTag(s string) bool {
	if s == "" {
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

// foldName folds a name as encoding/json does to match keys to fields
// case-insensitively: ASCII to upper case, any other rune through lower
// then upper case ('ſ' → 'S', the Kelvin sign → 'K').
func foldName(s string) string {
	b := make([]byte, 0, len(s))
	for _, r := range s {
		if r < utf8.RuneSelf {
			if 'a' <= r && r <= 'z' {
				r -= 'a' - 'A'
			}
			b = append(b, byte(r))
			continue
		}
		b = utf8.AppendRune(b, unicode.ToUpper(unicode.ToLower(r)))
	}
	return string(b)
}
