package signature

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Signature is an immutable description of a task: instructions plus
// ordered input and output fields. Every method that changes something
// returns a new Signature and leaves the receiver untouched, so a Signature
// is safe for concurrent use and may be shared freely.
type Signature struct {
	instructions string
	inputs       []Field
	outputs      []Field
	types        map[string]reflect.Type // names from WithTypes, for edits that parse type names
	names        map[reflect.Type]string // the reverse: how registered types are named
	memo         *memoTable              // Memo's values; every signature has its own
}

// Memo returns the value kept under key for this signature, calling build
// to make it the first time (concurrent first calls may each build; one
// result is kept). Adapters keep here what they build for the signature,
// such as a system message, and may keep what they last built from other
// arguments beside it (the adapter package keeps its latest demos'
// messages). Keys should be values of an unexported type of
// the caller's package, as context keys are. Edits return signatures with
// their own, empty memo.
func (s *Signature) Memo(key any, build func() any) any {
	if s.memo == nil {
		return build()
	}
	return s.memo.get(key, build)
}

// memoTable holds a signature's Memo values: the first few keys in slots
// read without hashing (a call reads several: the adapter's layout, the
// traits, the reply's index), the rest in a sync.Map.
type memoTable struct {
	slots [4]atomic.Pointer[memoEntry]
	more  sync.Map
}

type memoEntry struct{ key, val any }

func (t *memoTable) get(key any, build func() any) any {
	for i := range t.slots {
		e := t.slots[i].Load()
		if e == nil {
			break // slots fill in order: the key is not in one
		}
		if e.key == key {
			return e.val
		}
	}
	if v, ok := t.more.Load(key); ok {
		return v
	}
	v, _ := t.more.LoadOrStore(key, build())
	// The kept value moves to a free slot, if one is left; the sync.Map
	// keeps it too, so a key is found whichever a reader looks in.
	e := &memoEntry{key, v}
	for i := range t.slots {
		if t.slots[i].CompareAndSwap(nil, e) {
			break
		}
		if t.slots[i].Load().key == key {
			break // another caller put it there
		}
	}
	return v
}

// Option configures [Parse] and [FromStructs].
type Option func(*config)

type config struct {
	types           map[string]reflect.Type
	instructions    string
	hasInstructions bool
}

// WithTypes names custom types for use in signature strings, like DSPy's
// custom_types: "image: Image -> answer: Answer". The registered name is
// also the name the model is shown for the type, wherever it appears
// (inside lists, as a nested struct field). A dotted name in a signature
// ("dspy.Image") resolves by its full text first, then by its last part.
func WithTypes(types map[string]reflect.Type) Option {
	return func(c *config) {
		if c.types == nil {
			c.types = make(map[string]reflect.Type, len(types))
		}
		maps.Copy(c.types, types)
	}
}

// WithInstructions sets the task instructions. Without it a signature gets
// DSPy's default: "Given the fields `a`, `b`, produce the fields `c`."
func WithInstructions(text string) Option {
	return func(c *config) {
		c.instructions = text
		c.hasInstructions = true
	}
}

func newConfig(opts []Option) *config {
	c := &config{}
	for _, o := range opts {
		if o != nil {
			o(c)
		}
	}
	return c
}

// reverseNames maps each registered type to the name it is shown with; a
// type registered under several names takes the first in sorted order.
func reverseNames(types map[string]reflect.Type) map[reflect.Type]string {
	if len(types) == 0 {
		return nil
	}
	names := make(map[reflect.Type]string, len(types))
	for _, n := range slices.Sorted(maps.Keys(types)) {
		t := types[n]
		if t == nil {
			continue
		}
		if _, ok := names[t]; !ok {
			names[t] = n[strings.LastIndexByte(n, '.')+1:]
		}
	}
	return names
}

// New builds a signature from explicit fields. Empty instructions give
// DSPy's default text. It fails if a name is not an identifier, appears
// twice (inputs and outputs share one namespace), or a type cannot be
// carried by an adapter.
func New(instructions string, inputs, outputs []Field) (*Signature, error) {
	return build(instructions, inputs, outputs, nil)
}

func build(instructions string, inputs, outputs []Field, types map[string]reflect.Type) (*Signature, error) {
	s := &Signature{types: types, names: reverseNames(types), memo: new(memoTable)}
	seen := make(map[string]bool, len(inputs)+len(outputs))
	var err error
	if s.inputs, err = s.resolveAll(inputs, seen); err != nil {
		return nil, err
	}
	if s.outputs, err = s.resolveAll(outputs, seen); err != nil {
		return nil, err
	}
	s.instructions = instructions
	if instructions == "" {
		s.instructions = s.defaultInstructions()
	}
	return s, nil
}

func (s *Signature) resolveAll(fields []Field, seen map[string]bool) ([]Field, error) {
	out := make([]Field, 0, len(fields))
	for _, f := range fields {
		r, err := f.resolve(s.names)
		if err != nil {
			return nil, err
		}
		if seen[r.Name] {
			return nil, &FieldError{r.Name, ErrDuplicate}
		}
		seen[r.Name] = true
		out = append(out, r)
	}
	return out, nil
}

func (s *Signature) defaultInstructions() string {
	quote := func(fs []Field) string {
		parts := make([]string, len(fs))
		for i, f := range fs {
			parts[i] = "`" + f.Name + "`"
		}
		return strings.Join(parts, ", ")
	}
	return "Given the fields " + quote(s.inputs) + ", produce the fields " + quote(s.outputs) + "."
}

// Instructions returns the task instructions.
func (s *Signature) Instructions() string { return s.instructions }

// Inputs returns the input fields in order. The slice is a copy.
func (s *Signature) Inputs() []Field { return slices.Clone(s.inputs) }

// Outputs returns the output fields in order. The slice is a copy.
func (s *Signature) Outputs() []Field { return slices.Clone(s.outputs) }

// NumInputs and NumOutputs report the field counts without copying.
func (s *Signature) NumInputs() int { return len(s.inputs) }

// NumOutputs reports the number of output fields.
func (s *Signature) NumOutputs() int { return len(s.outputs) }

// Input returns the i-th input field without copying the list.
func (s *Signature) Input(i int) Field { return s.inputs[i] }

// OutputName returns the i-th output's name without copying the field.
func (s *Signature) OutputName(i int) string { return s.outputs[i].Name }

// InputName returns the name of the i-th input (Input(i).Name without
// copying the field).
func (s *Signature) InputName(i int) string { return s.inputs[i].Name }

// Output returns the i-th output field without copying the list.
func (s *Signature) Output(i int) Field { return s.outputs[i] }

// Field looks a field up by name among inputs and outputs.
func (s *Signature) Field(name string) (f Field, isOutput, ok bool) {
	for _, f := range s.inputs {
		if f.Name == name {
			return f, false, true
		}
	}
	for _, f := range s.outputs {
		if f.Name == name {
			return f, true, true
		}
	}
	return Field{}, false, false
}

// Types returns a copy of the custom type names the signature was built
// with (see [WithTypes]).
func (s *Signature) Types() map[string]reflect.Type { return maps.Clone(s.types) }

// String renders the signature in DSPy's syntax, with types: "question,
// context: list[str] -> answer: int". Parsing it (with the same custom
// types) gives a signature with equal fields.
func (s *Signature) String() string {
	var b strings.Builder
	side := func(fs []Field) {
		for i, f := range fs {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(f.Name)
			if !f.Spec.IsStr() {
				b.WriteString(": ")
				f.Spec.writeName(&b, true)
			}
		}
	}
	side(s.inputs)
	b.WriteString(" -> ")
	side(s.outputs)
	return b.String()
}

// Equal reports whether two signatures have the same instructions and the
// same fields (names, types, descriptions, prefixes, constraints, defaults),
// like DSPy's Signature.equals.
func (s *Signature) Equal(o *Signature) bool {
	if s == o {
		return true
	}
	if s == nil || o == nil || s.instructions != o.instructions ||
		len(s.inputs) != len(o.inputs) || len(s.outputs) != len(o.outputs) {
		return false
	}
	for i := range s.inputs {
		if !s.inputs[i].equal(o.inputs[i]) {
			return false
		}
	}
	for i := range s.outputs {
		if !s.outputs[i].equal(o.outputs[i]) {
			return false
		}
	}
	return true
}

func (s *Signature) clone() *Signature {
	c := *s
	c.inputs = slices.Clone(s.inputs)
	c.outputs = slices.Clone(s.outputs)
	c.memo = new(memoTable)
	return &c
}

// WithInstructions returns a copy with new instructions.
func (s *Signature) WithInstructions(text string) *Signature {
	c := s.clone()
	c.instructions = text
	return c
}

// AppendInstructions returns a copy whose instructions are the old ones, a
// blank line, and text (DSPy's append_instructions).
func (s *Signature) AppendInstructions(text string) *Signature {
	return s.WithInstructions(s.instructions + "\n\n" + text)
}

// Role says whether a field is an input or an output.
type Role uint8

// The two roles.
const (
	Input Role = iota + 1
	Output
)

// String returns "input" or "output".
func (r Role) String() string {
	switch r {
	case Input:
		return "input"
	case Output:
		return "output"
	}
	return fmt.Sprintf("Role(%d)", r)
}

// Insert returns a copy with f inserted into the inputs or outputs at index.
// A negative index counts from the end as in DSPy (-1 appends). The
// instructions are kept as they are, even default ones, as DSPy does.
func (s *Signature) Insert(role Role, index int, f Field) (*Signature, error) {
	c := s.clone()
	list := &c.inputs
	switch role {
	case Input:
	case Output:
		list = &c.outputs
	default:
		return nil, fmt.Errorf("signature: insert: invalid role %v", role)
	}
	n := len(*list)
	if index < 0 {
		index += n + 1
	}
	if index < 0 || index > n {
		return nil, fmt.Errorf("signature: insert %q: invalid index %d for %d %s fields", f.Name, index, n, role)
	}
	r, err := f.resolve(s.names)
	if err != nil {
		return nil, err
	}
	if _, _, dup := s.Field(r.Name); dup {
		return nil, &FieldError{r.Name, ErrDuplicate}
	}
	*list = slices.Insert(*list, index, r)
	return c, nil
}

// Prepend inserts f first among the inputs or outputs. ChainOfThought's
// reasoning field is Prepend(Output, Field{Name: "reasoning", Desc: "${reasoning}"}).
func (s *Signature) Prepend(role Role, f Field) (*Signature, error) { return s.Insert(role, 0, f) }

// Append inserts f last among the inputs or outputs.
func (s *Signature) Append(role Role, f Field) (*Signature, error) { return s.Insert(role, -1, f) }

// Delete returns a copy without the named field; a missing name is not an
// error (as in DSPy). Instructions are kept verbatim.
func (s *Signature) Delete(name string) *Signature {
	c := s.clone()
	c.inputs = slices.DeleteFunc(c.inputs, func(f Field) bool { return f.Name == name })
	c.outputs = slices.DeleteFunc(c.outputs, func(f Field) bool { return f.Name == name })
	return c
}

// Update returns a copy in which the named field has been changed by edit
// (its description, prefix, type, constraints or default). Changing Type
// alone or Spec alone is enough; the other follows. Renaming is allowed if
// the new name is free.
func (s *Signature) Update(name string, edit func(*Field)) (*Signature, error) {
	c := s.clone()
	for _, list := range [][]Field{c.inputs, c.outputs} {
		for i := range list {
			if list[i].Name != name {
				continue
			}
			f := list[i]
			f.Constraints = slices.Clone(f.Constraints)
			edit(&f)
			switch old := list[i]; {
			case f.Type != old.Type && f.Spec == old.Spec:
				f.Spec = nil
			case f.Spec != old.Spec && f.Type == old.Type:
				f.Type = nil
			}
			if f.Prefix == list[i].Prefix && f.Name != name {
				f.Prefix = "" // re-infer for a renamed field
			}
			r, err := f.resolve(s.names)
			if err != nil {
				return nil, err
			}
			if r.Name != name {
				if _, _, dup := s.Field(r.Name); dup {
					return nil, &FieldError{r.Name, ErrDuplicate}
				}
			}
			list[i] = r
			return c, nil
		}
	}
	return nil, &FieldError{name, fmt.Errorf("no such field")}
}
