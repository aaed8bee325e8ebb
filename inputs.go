package adapter

import (
	"maps"

	"github.com/sigwire/adapter/signature"
)

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

// checkInputs reports unknown inputs, and missing ones that have neither a
// default nor a nullable type.
func checkInputs(sig *signature.Signature, inputs Values) error {
	for name := range inputs {
		if _, isOut, ok := sig.Field(name); !ok || isOut {
			return &InputError{Field: name, Err: ErrUnknownInput}
		}
	}
	for _, f := range sig.Inputs() {
		if _, ok := inputs[f.Name]; !ok && !f.HasDefault && !f.Spec.Nullable() {
			return &InputError{Field: f.Name, Err: ErrMissingInput}
		}
	}
	return nil
}
