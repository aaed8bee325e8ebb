package types

import (
	"encoding/json"
	"strings"

	"github.com/sigwire/adapter/internal/jsonx"
	"github.com/sigwire/adapter/internal/pyjson"
)

// argsInOrder is the one rule for showing a call's arguments again (its
// text form, its native replay, the arguments Execute traces and hands
// the tool): the values are always Args'; the order is the model's, read
// from RawArgs, wherever RawArgs holds an object whose keys are exactly
// those of the matching object in Args, at every depth. An object for
// which it does not (a call built by hand, Args changed since it was
// read, no RawArgs) keeps its map's order, sorted. Nil Args are the empty
// object. The result is a pyjson.Object tree over Args' values, for
// pyjson.Marshal (Python's json.dumps) or argsJSON (encoding/json).
func (c ToolCall) argsInOrder() any {
	if c.Args == nil {
		return map[string]any{}
	}
	raw := strings.TrimSpace(c.RawArgs)
	if !strings.HasPrefix(raw, "{") {
		return c.Args
	}
	order, err := pyjson.Decode([]byte(raw))
	if err != nil {
		// Arguments read through repair (a Python literal, a trailing
		// comma): their order is the repaired text's.
		fixed, ferr := jsonx.Exact(raw)
		if ferr != nil {
			return c.Args
		}
		if order, err = pyjson.Decode([]byte(fixed)); err != nil {
			return c.Args
		}
	}
	return ordered(c.Args, order, 0)
}

// ordered is v (Args or a value in it) with each object of it whose keys
// are exactly those of the object at the same place in order made a
// pyjson.Object in order's key order; everything else is v's own.
func ordered(v, order any, depth int) any {
	if depth > 1000 {
		return v
	}
	switch x := v.(type) {
	case map[string]any:
		o, ok := order.(pyjson.Object)
		if !ok || x == nil || o.Len() != len(x) {
			return v
		}
		members := o.Members()
		for i, m := range members {
			val, ok := x[m.Key]
			if !ok {
				return v
			}
			members[i].Value = ordered(val, m.Value, depth+1)
		}
		return pyjson.NewObject(members...)
	case []any:
		list, ok := order.([]any)
		if !ok || x == nil || len(list) != len(x) {
			return v
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = ordered(e, list[i], depth+1)
		}
		return out
	}
	return v
}

// argsJSON renders argsInOrder's tree as encoding/json renders the same
// values (json.Marshal(Args) but for the order): compact, HTML-escaped,
// Go's number forms.
func argsJSON(v any) ([]byte, error) {
	return appendArgsJSON(nil, v)
}

func appendArgsJSON(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case pyjson.Object:
		b = append(b, '{')
		for i, m := range x.Members() {
			if i > 0 {
				b = append(b, ',')
			}
			k, err := json.Marshal(m.Key)
			if err != nil {
				return nil, err
			}
			b = append(append(b, k...), ':')
			if b, err = appendArgsJSON(b, m.Value); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	case []any:
		if x == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendArgsJSON(b, e); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	}
	e, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, e...), nil
}
