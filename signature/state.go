package signature

import (
	"fmt"
	"slices"
)

// State is the signature part of a program DSPy saved with
// program.save("program.json"): the instructions and, for every field in
// order (inputs, then outputs), its prefix and description. Optimizers such
// as MIPROv2 rewrite exactly these texts, so loading a State carries an
// optimized prompt from Python to Go unchanged. It marshals to the same JSON
// DSPy writes.
type State struct {
	Instructions string       `json:"instructions"`
	Fields       []FieldState `json:"fields"`
}

// FieldState is one field's saved texts.
type FieldState struct {
	Prefix      string `json:"prefix"`
	Description string `json:"description"`
}

// State returns the signature's texts as DSPy's dump_state writes them; a
// field without description is written as DSPy's placeholder "${name}".
func (s *Signature) State() State {
	st := State{Instructions: s.instructions, Fields: make([]FieldState, 0, len(s.inputs)+len(s.outputs))}
	for _, f := range slices.Concat(s.inputs, s.outputs) {
		d := f.Desc
		if d == "" {
			d = "${" + f.Name + "}"
		}
		st.Fields = append(st.Fields, FieldState{Prefix: f.Prefix, Description: d})
	}
	return st
}

// WithState returns a copy carrying the instructions, prefixes and
// descriptions of st, matched to the fields by position as DSPy's
// load_state does. Unlike DSPy, which silently ignores extra or missing
// entries, a State with a different number of fields is an error: it was
// saved from a different signature.
func (s *Signature) WithState(st State) (*Signature, error) {
	n := len(s.inputs) + len(s.outputs)
	if len(st.Fields) != n {
		return nil, fmt.Errorf("signature: saved state has %d fields, signature %q has %d", len(st.Fields), s.String(), n)
	}
	c := s.clone()
	c.instructions = st.Instructions
	for i, fs := range st.Fields {
		f := &c.inputs
		j := i
		if i >= len(c.inputs) {
			f, j = &c.outputs, i-len(c.inputs)
		}
		(*f)[j].Prefix = fs.Prefix
		(*f)[j].Desc = fs.Description
		if fs.Description == "${"+(*f)[j].Name+"}" {
			(*f)[j].Desc = ""
		}
	}
	return c, nil
}
