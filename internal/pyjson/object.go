package pyjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// Object is a JSON object that keeps its members in the order they were
// written, as a Python dict keeps insertion order. Marshal, Repr and Str
// render its members in that order; encoding/json marshals it in that
// order too. The zero value is an empty object.
type Object struct {
	members []Member
}

// Member is one key and value of an Object.
type Member struct {
	Key   string
	Value any
}

// NewObject returns an object with members in order; a repeated key keeps
// its first position and takes the last value, as a Python dict does.
func NewObject(members ...Member) Object {
	var b builder
	for _, m := range members {
		b.set(m.Key, m.Value)
	}
	return b.o
}

// builder builds an Object as Set would, a member at a time, in time
// linear in its members: past indexFrom members it finds a repeated key
// through a map instead of a scan (a model's reply can hold an object of
// a hundred thousand keys).
type builder struct {
	o   Object
	idx map[string]int
}

// indexFrom is the size from which builder indexes the keys.
const indexFrom = 16

func (b *builder) set(key string, v any) {
	if b.idx == nil {
		if len(b.o.members) < indexFrom {
			b.o.Set(key, v)
			return
		}
		b.idx = make(map[string]int, 2*len(b.o.members))
		for i, m := range b.o.members {
			b.idx[m.Key] = i
		}
	}
	if i, ok := b.idx[key]; ok {
		b.o.members[i].Value = v
		return
	}
	b.idx[key] = len(b.o.members)
	b.o.members = append(b.o.members, Member{key, v})
}

// Len is the number of members.
func (o Object) Len() int { return len(o.members) }

// Members returns the members in order.
func (o Object) Members() []Member { return append([]Member(nil), o.members...) }

// Keys returns the keys in order.
func (o Object) Keys() []string {
	keys := make([]string, len(o.members))
	for i, m := range o.members {
		keys[i] = m.Key
	}
	return keys
}

// Get returns the value of key.
func (o Object) Get(key string) (any, bool) {
	for _, m := range o.members {
		if m.Key == key {
			return m.Value, true
		}
	}
	return nil, false
}

// Set replaces the value of key in place, or appends the member.
func (o *Object) Set(key string, v any) {
	for i := range o.members {
		if o.members[i].Key == key {
			o.members[i].Value = v
			return
		}
	}
	o.members = append(o.members, Member{key, v})
}

// MarshalJSON writes the members in order, as Python's json.dumps would
// (compact; Marshal adds Python's separators).
func (o Object) MarshalJSON() ([]byte, error) {
	return marshal(reflect.ValueOf(o), 0)
}

// Plain returns the value with every Object turned into a map[string]any
// (key order lost) and every list into []any: the shape encoding/json
// decodes into.
func Plain(v any) any {
	switch x := v.(type) {
	case Object:
		m := make(map[string]any, len(x.members))
		for _, mb := range x.members {
			m[mb.Key] = Plain(mb.Value)
		}
		return m
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = Plain(e)
		}
		return out
	}
	return v
}

var objectType = reflect.TypeFor[Object]()

func (e encoder) appendObject(b []byte, o Object, depth int) ([]byte, error) {
	b = append(b, '{')
	for i, m := range o.members {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendQuote(b, m.Key)
		b = append(b, ':')
		var err error
		if b, err = e.appendJSON(b, reflect.ValueOf(m.Value), depth+1); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

func appendObjectRepr(b []byte, o Object, depth int) ([]byte, error) {
	b = append(b, '{')
	for i, m := range o.members {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = appendPyString(b, m.Key)
		b = append(b, ": "...)
		var err error
		if b, err = appendRepr(b, reflect.ValueOf(m.Value), depth+1); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// Decode reads one JSON value as Python's json.loads does: objects become
// Object (member order kept; a repeated key keeps its first position and
// its last value), arrays []any, integers int (json.Number beyond int's
// range), other numbers float64, and strings, bools and null as
// encoding/json decodes them. Text after the value is an error.
func Decode(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(data[dec.InputOffset():])) > 0 {
		return nil, errors.New("pyjson: text after the JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder, depth int) (any, error) {
	if depth > maxDepth {
		return nil, ErrTooDeep
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch x := tok.(type) {
	case json.Delim:
		switch x {
		case '{':
			var o builder
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, ok := k.(string)
				if !ok {
					return nil, fmt.Errorf("pyjson: object key %v is not a string", k)
				}
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				o.set(key, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return o.o, nil
		case '[':
			list := []any{}
			for dec.More() {
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				list = append(list, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return list, nil
		}
		return nil, fmt.Errorf("pyjson: unexpected %v", x)
	case json.Number:
		return number(x), nil
	}
	return tok, nil
}

// number is a JSON number as Python holds it: an int for an integer
// literal, a float otherwise.
func number(n json.Number) any {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 0); err == nil {
			return int(i)
		}
		return n // a Python int beyond Go's: kept as written
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) {
		return n
	}
	return f
}
