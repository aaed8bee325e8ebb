package value

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"reflect"
	"strings"

	"github.com/sigwire/adapter/internal/pyjson"
)

// The markers DSPy wraps a custom type's content parts in while a message
// is rendered as text; the adapter then splits user messages at them.
const (
	PartsStart = "<<CUSTOM-TYPE-START-IDENTIFIER>>"
	PartsEnd   = "<<CUSTOM-TYPE-END-IDENTIFIER>>"
)

// PartsKey is a random token, drawn once per process, that a marker
// rendered from a Formatter value carries right after PartsStart. Only
// markers with the key become content parts: the same marker text inside
// plain text (an input string, a list item, a demo, a History turn) cannot
// carry it, so it stays text. The key never leaves the process: the
// adapter removes it from every message (StripKey) and splits user
// messages only at PartsOpen.
var PartsKey = newPartsKey()

// PartsOpen is where a marker rendered from a Formatter value starts.
var PartsOpen = PartsStart + PartsKey

// newPartsKey draws the key: 32 random hex digits between two tildes. A
// tilde is rare in prompts (a marker's '#' or '<' is not), so looking for
// the key in a message costs about one IndexByte; and no quoting a
// message's values go through (JSON, Python, XML) escapes any of it.
func newPartsKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand panics rather)
	return "~" + hex.EncodeToString(b[:]) + "~"
}

// StripKey removes PartsKey from s, leaving DSPy's marker text; s itself
// when it holds no key.
func StripKey(s string) string {
	if !strings.Contains(s, PartsKey) {
		return s
	}
	return strings.ReplaceAll(s, PartsKey, "")
}

var errorType = reflect.TypeFor[error]()

// partsMarker renders a value with a FormatParts method (the root's
// Formatter) as its marker string. ok is false for other values.
func partsMarker(v reflect.Value) (string, bool, error) {
	for v.IsValid() && v.Kind() == reflect.Interface && !v.IsNil() {
		v = v.Elem()
	}
	if !v.IsValid() {
		return "", false, nil
	}
	m := v.MethodByName("FormatParts")
	if !m.IsValid() && v.Kind() != reflect.Pointer && v.CanAddr() {
		m = v.Addr().MethodByName("FormatParts")
	}
	if !m.IsValid() {
		return "", false, nil
	}
	t := m.Type()
	if t.NumIn() != 0 || t.NumOut() != 2 || t.Out(1) != errorType {
		return "", false, nil
	}
	if v.Kind() == reflect.Pointer && v.IsNil() {
		return "", false, nil
	}
	out := m.Call(nil)
	if err, _ := out[1].Interface().(error); err != nil {
		return "", false, err
	}
	b, err := pyjson.Marshal(out[0].Interface())
	if err != nil {
		return "", false, fmt.Errorf("content parts: %w", err)
	}
	// The payload is JSON: escaping < keeps PartsEnd out of it (a URL may
	// hold any text) without changing what it decodes to.
	payload := strings.ReplaceAll(string(b), "<", `\u003c`)
	return PartsOpen + payload + PartsEnd, true, nil
}
