package jsonx

import (
	"encoding/json"
	"fmt"
	"strings"
)

// DuplicateKeyError reports an object that gives one key twice with
// different values: decoding would silently keep the last, a guess.
type DuplicateKeyError struct {
	Key string
}

func (e *DuplicateKeyError) Error() string {
	return fmt.Sprintf("jsonx: key %q appears twice in one object with different values", e.Key)
}

// checkDuplicates reports a key given twice with different values in one
// object of s, a valid JSON text whose decoded form is v. The common case
// costs one scan: every member of valid JSON has exactly one ':' outside
// strings, so as many colons as decoded members means no key repeats.
func checkDuplicates(s string, v any) error {
	if colons(s) == members(v) {
		return nil
	}
	return findDuplicate(s)
}

// colons counts the ':' outside strings.
func colons(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			i = closingQuote(s, i)
		case ':':
			n++
		}
	}
	return n
}

// members counts the members of every object in v.
func members(v any) int {
	switch v := v.(type) {
	case map[string]any:
		n := len(v)
		for _, e := range v {
			n += members(e)
		}
		return n
	case []any:
		n := 0
		for _, e := range v {
			n += members(e)
		}
		return n
	}
	return 0
}

// findDuplicate scans valid JSON for a key repeated in one object with a
// different value (values compared as written, blanks trimmed).
func findDuplicate(s string) error {
	type frame struct {
		object   bool
		seen     map[string]string
		key      string
		valStart int // -1: no member open
	}
	var stack []*frame
	closeMember := func(f *frame, end int) error {
		if !f.object || f.valStart < 0 {
			return nil
		}
		val := strings.TrimSpace(s[f.valStart:end])
		if old, ok := f.seen[f.key]; ok && old != val {
			return &DuplicateKeyError{Key: f.key}
		}
		f.seen[f.key] = val
		f.valStart = -1
		return nil
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			end := closingQuote(s, i)
			if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].valStart < 0 {
				key := s[i+1 : min(end, len(s))]
				if strings.Contains(key, `\`) {
					var k string
					if json.Unmarshal([]byte(s[i:min(end+1, len(s))]), &k) == nil {
						key = k
					}
				}
				stack[n-1].key = key
			}
			i = end
		case ':':
			if n := len(stack); n > 0 {
				stack[n-1].valStart = i + 1
			}
		case '{', '[':
			stack = append(stack, &frame{object: c == '{', seen: map[string]string{}, valStart: -1})
		case '}', ']', ',':
			n := len(stack)
			if n == 0 {
				continue
			}
			if err := closeMember(stack[n-1], i); err != nil {
				return err
			}
			if c != ',' {
				stack = stack[:n-1]
			}
		}
	}
	return nil
}
