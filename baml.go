package adapter

import (
	"reflect"
	"slices"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/sigwire/adapter/internal/pyjson"
	"github.com/sigwire/adapter/internal/reply"
	"github.com/sigwire/adapter/signature"
)

// BAML is DSPy's BAMLAdapter: the JSON adapter with output types shown in
// a compact, commented notation instead of JSON Schema, which smaller
// models follow more easily:
//
//	Output field `patient` should be of type: {
//	  # Full name of the patient
//	  name: string,
//	  visits: [
//	    {
//	      date: string,
//	    }
//	  ],
//	  tags: string[],
//	}
//
// Struct inputs are shown as indented JSON. Parsing, structured-output
// tiers and native tool calling are the JSON adapter's. The zero value is
// ready to use and safe for concurrent use.
type BAML struct {
	// Options are the settings BAML shares with the other adapters: native
	// tool calling on unless NativeTools turns it off, as JSON's (DSPy's
	// BAMLAdapter is a JSONAdapter); no fallback (NoFallback does
	// nothing).
	Options Options
}

// Name returns "baml".
func (BAML) Name() string { return "baml" }

// NativeTools reports whether BAML asks for native function calling (on
// unless Options.NativeTools turns it off) and its parallel_tool_calls.
func (m BAML) NativeTools() (bool, Switch) { return m.Options.nativeTools(true) }

// WithNativeTools returns m with native function calling on.
func (m BAML) WithNativeTools() Adapter { m.Options.NativeTools = On; return m }

// Format renders the system message with BAML type notation, the demos
// (assistant turns as JSON) and the user message with the JSON reminder.
func (m BAML) Format(sig *signature.Signature, demos []Values, inputs Values) ([]openai.ChatCompletionMessage, error) {
	native, _ := m.NativeTools()
	return bamlLayout.format(m.Options.Prompt, sig, demos, inputs, native)
}

// outputRequirements returns the output requirements Format ends the
// request with, which a re-ask repeats (see outputRequirer).
func (m BAML) outputRequirements(sig *signature.Signature) (string, error) {
	return bamlLayout.requirements(m.Options.Prompt, sig)
}

// bamlLayout is how the BAML adapter writes a conversation.
var bamlLayout = layout{
	system: bamlSystem, structure: bamlStructure, reminder: jsonReminder,
	user: bamlUser, assistant: jsonAssistant,
}

// bamlSystem renders the BAML adapter's system message.
func bamlSystem(sig *signature.Signature) (string, error) { return systemText(sig, bamlStructure) }

// bamlStructure writes DSPy's BAMLAdapter.format_field_structure: the
// inputs in [[ ## name ## ]] sections, each output with its type in BAML
// notation.
func bamlStructure(b *strings.Builder, sig *signature.Signature) error {
	b.WriteString("All interactions will be structured in the following way, with the appropriate values filled in.\n\n")
	for i := range sig.NumInputs() {
		name := sig.Input(i).Name
		b.WriteString("[[ ## " + name + " ## ]]\n{" + name + "}\n\n")
	}
	for i := range sig.NumOutputs() {
		f := sig.Output(i)
		t, err := bamlType(f.Spec, 0, nil)
		if err != nil {
			return &InputError{Field: f.Name, Err: err}
		}
		b.WriteString("[[ ## " + f.Name + " ## ]]\nOutput field `" + f.Name + "` should be of type: " + t + "\n\n")
	}
	b.WriteString("[[ ## completed ## ]]")
	return nil
}

// bamlUser is the JSON adapter's user message, struct inputs as JSON
// indented by two spaces, empty parts dropped.
func bamlUser(a *arena, sig *signature.Signature, vals Values, prefix, reminder string) (string, error) {
	b := &a.b
	start := b.Len()
	b.WriteString(prefix)
	for i := range sig.NumInputs() {
		f := sig.Input(i)
		v, ok := vals[f.Name]
		if !ok {
			continue
		}
		var s string
		if isStructValue(v) {
			enc, err := pyjson.MarshalIndent(v, "", "  ")
			if err != nil {
				return "", &InputError{Field: f.Name, Err: err}
			}
			s = string(enc)
		} else {
			var err error
			if s, err = formatValue(v, f); err != nil {
				return "", err
			}
		}
		if b.Len() > start {
			b.WriteString("\n\n")
		}
		b.WriteString("[[ ## " + f.Name + " ## ]]\n" + s)
	}
	if reminder != "" {
		if b.Len() > start {
			b.WriteString("\n\n")
		}
		b.WriteString(reminder)
	}
	return a.since(start), nil
}

// isStructValue reports a struct (a pydantic model in DSPy), or a pointer
// to one.
func isStructValue(v any) bool {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer && !rv.IsNil() {
		rv = rv.Elem()
	}
	return rv.Kind() == reflect.Struct && !implementsAnyMarshaler(rv.Type()) && !rv.Type().Implements(formatterType)
}

// Parse reads the output fields as the JSON adapter does.
func (BAML) Parse(sig *signature.Signature, completion string) (Values, error) {
	return parseReply(sig, completion, "baml", BAML{}.replyShape())
}

// replyShape: a BAML reply is read as JSON first.
func (BAML) replyShape() reply.Shape { return reply.JSON }

// NewFieldStream streams as the JSON adapter does.
func (BAML) NewFieldStream(sig *signature.Signature) FieldStream {
	return JSON{}.NewFieldStream(sig)
}

// ShapeRequest chooses the response format as the JSON adapter does.
func (BAML) ShapeRequest(sig *signature.Signature, req *openai.ChatCompletionRequest, caps Capabilities, level int) (string, bool, error) {
	return shapeJSON(sig, req, caps, level)
}

const bamlIndent = "  "

// bamlType is DSPy's _render_type_str: string, int, float, boolean; a
// struct as a commented block; "A or B" for unions (" or null" for None);
// Literal members quoted; list[T] as T[] (a list of structs as a bracketed
// block); dict[K, V]; other types by name. path holds the structs being
// rendered, to refuse recursion.
func bamlType(spec *signature.TypeSpec, indent int, path []reflect.Type) (string, error) {
	switch spec.Kind() {
	case signature.KindString:
		if spec.IsStr() {
			return "string", nil
		}
	case signature.KindInt:
		return "int", nil
	case signature.KindFloat:
		return "float", nil
	case signature.KindBool:
		return "boolean", nil
	case signature.KindStruct:
		return bamlStruct(spec, indent, path)
	case signature.KindOptional, signature.KindUnion:
		var parts []string
		null := false
		for _, o := range spec.Options() {
			if o.Kind() == signature.KindNone {
				null = true
				continue
			}
			p, err := bamlType(o, indent, path)
			if err != nil {
				return "", err
			}
			parts = append(parts, p)
		}
		s := strings.Join(parts, " or ")
		if null {
			s += " or null"
		}
		return s, nil
	case signature.KindLiteral:
		lits := spec.Literals()
		parts := make([]string, len(lits))
		for i, l := range lits {
			parts[i] = `"` + pyjson.Str(l) + `"`
		}
		return strings.Join(parts, " or "), nil
	case signature.KindList:
		if spec.Elem().Kind() == signature.KindStruct {
			inner, err := bamlStruct(spec.Elem(), indent+1, path)
			if err != nil {
				return "", err
			}
			return "[\n" + inner + "\n" + strings.Repeat(bamlIndent, indent) + "]", nil
		}
		inner, err := bamlType(spec.Elem(), indent, path)
		if err != nil {
			return "", err
		}
		return inner + "[]", nil
	case signature.KindDict:
		k, err := bamlType(spec.Key(), indent, path)
		if err != nil {
			return "", err
		}
		v, err := bamlType(spec.Elem(), indent, path)
		if err != nil {
			return "", err
		}
		return "dict[" + k + ", " + v + "]", nil
	}
	return spec.String(), nil
}

// bamlStruct is DSPy's _build_simplified_schema.
func bamlStruct(spec *signature.TypeSpec, indent int, path []reflect.Type) (string, error) {
	if slices.Contains(path, spec.GoType()) {
		return "", errRecursiveBAML
	}
	path = append(path, spec.GoType())
	fields, err := spec.Fields()
	if err != nil {
		return "", err
	}
	cur, next := strings.Repeat(bamlIndent, indent), strings.Repeat(bamlIndent, indent+1)
	var b strings.Builder
	b.WriteString(cur + "{")
	if len(fields) == 0 {
		b.WriteString("\n" + next + "# No fields defined")
	}
	for _, sf := range fields {
		f := sf.Field
		if f.Desc != "" {
			b.WriteString("\n" + next + "# " + f.Desc)
		}
		t, err := bamlType(f.Spec, indent+1, path)
		if err != nil {
			return "", err
		}
		b.WriteString("\n" + next + f.Name + ": " + t + ",")
	}
	b.WriteString("\n" + cur + "}")
	return b.String(), nil
}
