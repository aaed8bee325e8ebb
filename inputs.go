package adapter

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/sigwire/adapter/internal/pyjson"
	"github.com/sigwire/adapter/internal/value"
	"github.com/sigwire/adapter/signature"
)

// nearestInput returns the input field whose name is closest to name (at
// most two edits apart, case ignored), or "".
func nearestInput(sig *signature.Signature, name string) string {
	best, bestD := "", 3
	for i := range sig.NumInputs() {
		f := sig.Input(i).Name
		if d := editDistance(strings.ToLower(name), strings.ToLower(f), bestD); d < bestD {
			best, bestD = f, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, or max when it is
// at least max.
func editDistance(a, b string, max int) int {
	if d := len(a) - len(b); d >= max || -d >= max {
		return max
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], max)
}

// prepareInputs checks and converts a call's inputs before anything is
// sent: every name is an input field, every required input is given (or
// has a default, which is filled in), every value is converted to its
// field's Go type where that is lossless (int64 → int, []any of strings →
// []string, 3.0 → int; DESIGN decision 2) and meets the field's
// constraints. The result is a new map when anything changed; inputs
// itself is never modified. Errors are *InputError naming the field.
func prepareInputs(sig *signature.Signature, inputs Values) (Values, error) {
	if textInputs(sig, inputs) {
		return inputs, nil
	}
	known := 0 // the inputs' keys that name input fields
	for i := range sig.NumInputs() {
		f := sig.Input(i)
		if _, ok := inputs[f.Name]; ok {
			known++
		} else if !f.HasDefault && !f.Spec.Nullable() {
			if err := unknownInput(sig, inputs); err != nil {
				return nil, err // the misspelt name, rather than the field it misses
			}
			return nil, &InputError{Field: f.Name, Err: ErrMissingInput}
		}
	}
	if known < len(inputs) {
		return nil, unknownInput(sig, inputs)
	}
	out, err := convertInputs(sig, withDefaults(sig, inputs))
	if err != nil {
		return nil, err
	}
	for i := range sig.NumInputs() {
		f := sig.Input(i)
		v, ok := out[f.Name]
		if !ok || isNil(v) {
			continue
		}
		for _, c := range f.Constraints {
			if !satisfies(v, c) {
				return nil, &InputError{Field: f.Name, Err: fmt.Errorf("%w: %s is not %s", ErrConstraint, value.Brief(pyjson.Repr(v)), c)}
			}
		}
	}
	return out, nil
}

// unknownInput returns an *InputError for the first key of inputs (in
// sorted order) that names no input field, suggesting the nearest input;
// nil when every key names one.
func unknownInput(sig *signature.Signature, inputs Values) error {
	for _, name := range slices.Sorted(maps.Keys(inputs)) {
		if _, isOut, ok := sig.Field(name); !ok || isOut {
			err := ErrUnknownInput
			if near := nearestInput(sig, name); near != "" {
				err = fmt.Errorf("%w (did you mean %q?)", ErrUnknownInput, near)
			}
			return &InputError{Field: name, Err: err}
		}
	}
	return nil
}

// withDefaults returns inputs with the defaults of missing input fields
// filled in (DSPy's Predict does the same); inputs itself is not changed.
func withDefaults(sig *signature.Signature, inputs Values) Values {
	out, copied := inputs, false
	for i := range sig.NumInputs() {
		f := sig.Input(i)
		if _, ok := inputs[f.Name]; ok || !f.HasDefault {
			continue
		}
		if !copied {
			out, copied = maps.Clone(inputs), true
			if out == nil {
				out = Values{}
			}
		}
		out[f.Name] = f.Default
	}
	return out
}

// convertInputs converts the values of the input fields present in inputs
// to their fields' Go types (see prepareInputs); names that are not input
// fields are left as they are. Format applies it to the inputs it is
// given, so that what Call would refuse never reaches a prompt.
func convertInputs(sig *signature.Signature, inputs Values) (Values, error) {
	return convertInputsOf(sig, traitsOfSig(sig), inputs)
}

// convertInputsOf is convertInputs with sig's traits, st, at hand (Format
// keeps them with its other per-signature texts, one look-up for all).
func convertInputsOf(sig *signature.Signature, st *sigTraits, inputs Values) (Values, error) {
	if textInputsOf(sig, st, inputs) {
		return inputs, nil
	}
	out := inputs
	for i := range sig.NumInputs() {
		f := sig.Input(i)
		v, ok := inputs[f.Name]
		if !ok {
			continue
		}
		if _, isStr := v.(string); isStr && f.Type == stringType && f.Spec.Kind() == signature.KindString {
			continue // the common case, without reflection
		}
		cv, err := value.Convert(v, f.Spec)
		if err != nil {
			return nil, &InputError{Field: f.Name, Err: err}
		}
		if !sameValue(cv, v) {
			if sameMap(out, inputs) {
				out = maps.Clone(inputs)
			}
			out[f.Name] = cv
		}
	}
	return out, nil
}

var stringType = reflect.TypeFor[string]()

// textInputs reports whether sig's inputs are all str fields without
// defaults or constraints (kept per signature) and inputs holds a string
// for each and nothing else: the common call, which prepareInputs and
// convertInputs return unchanged without looking at each field in turn.
func textInputs(sig *signature.Signature, inputs Values) bool {
	// The count first: other inputs cost no look-up of the traits.
	return len(inputs) == sig.NumInputs() && textInputsOf(sig, traitsOfSig(sig), inputs)
}

// textInputsOf is textInputs with sig's traits, st, at hand.
func textInputsOf(sig *signature.Signature, st *sigTraits, inputs Values) bool {
	if len(inputs) != sig.NumInputs() || !st.text {
		return false
	}
	for i := range sig.NumInputs() {
		if _, ok := inputs[sig.InputName(i)].(string); !ok {
			return false
		}
	}
	return true
}

// sameMap reports whether a and b are the same map.
func sameMap(a, b Values) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// sameValue reports whether converting v gave v itself back (the same
// type, so the same value: conversion never changes a value it keeps,
// except a nil slice or map it makes empty).
func sameValue(cv, v any) bool {
	if reflect.TypeOf(cv) != reflect.TypeOf(v) {
		return false
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Slice, reflect.Map:
		return rv.IsNil() == reflect.ValueOf(cv).IsNil()
	}
	return true
}
