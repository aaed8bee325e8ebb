package adapter

import (
	"fmt"
	"iter"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"

	openai "github.com/sashabaranov/go-openai"
	"github.com/sigwire/adapter/internal/pyjson"
	"github.com/sigwire/adapter/internal/value"
	"github.com/sigwire/adapter/signature"
)

// FormatValue renders a field value as DSPy's format_field_value does: a
// str field's text as is (a list given to a str field as a numbered «list»),
// numbers, bools and None as Python prints them (3.0, True, None), and
// lists, dicts and structs as JSON with Python's separators.
//
// A value whose type formats itself as content parts ([Formatter]) renders
// as DSPy's marker text around the parts' JSON.
func FormatValue(v any, f signature.Field) (string, error) {
	s, err := formatValue(v, f)
	return value.StripKey(s), err
}

// formatValue is FormatValue for messages being built: a Formatter's
// marker keeps the key that lets expandParts tell it from text.
func formatValue(v any, f signature.Field) (string, error) {
	s, err := value.Format(v, f.Spec)
	if err != nil {
		return "", fmt.Errorf("adapter: field %q: %w", f.Name, err)
	}
	return s, nil
}

// writesNoneAsEmpty reports a nullable type for which the text "None"
// does not read back as None (Optional[str] keeps it as the string, as
// DSPy does): the text adapters write a None of it so that it reads back
// as None — Chat leaves the field's section out, XML writes <name />.
func writesNoneAsEmpty(spec *signature.TypeSpec) bool {
	if spec == nil || !spec.Nullable() {
		return false
	}
	v, err := value.Parse("None", spec)
	return err == nil && !isNil(v)
}

// writeFieldDescriptions writes DSPy's get_field_description_string for
// the fields of role r: one numbered line per field, with its description
// and constraints, the block stripped at the end.
func writeFieldDescriptions(b *strings.Builder, sig *signature.Signature, r signature.Role) {
	n := numFields(sig, r)
	for i := range n {
		f := fieldAt(sig, r, i)
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(strconv.Itoa(i + 1))
		b.WriteString(". `")
		b.WriteString(f.Name)
		b.WriteString("` (")
		b.WriteString(f.Spec.String())
		desc := f.Desc
		for _, d := range f.Spec.TypeDescriptions() {
			desc += "\n    " + d
		}
		if i == n-1 && len(f.Constraints) == 0 {
			desc = strings.TrimRightFunc(desc, unicode.IsSpace)
			if desc == "" {
				b.WriteString("):")
				continue
			}
		}
		b.WriteString("): ")
		b.WriteString(desc)
		if len(f.Constraints) > 0 {
			b.WriteString("\nConstraints: ")
			for j, c := range f.Constraints {
				if j > 0 {
					b.WriteString(", ")
				}
				b.WriteString(c.String())
			}
		}
	}
}

// roles are the two roles of a signature's fields, inputs first.
var roles = [...]signature.Role{signature.Input, signature.Output}

// fieldAt returns the i-th field of role r.
func fieldAt(sig *signature.Signature, r signature.Role, i int) signature.Field {
	if r == signature.Output {
		return sig.Output(i)
	}
	return sig.Input(i)
}

// fieldName returns the name of the i-th field of role r.
func fieldName(sig *signature.Signature, r signature.Role, i int) string {
	if r == signature.Output {
		return sig.OutputName(i)
	}
	return sig.InputName(i)
}

// numFields returns the number of fields of role r.
func numFields(sig *signature.Signature, r signature.Role) int {
	if r == signature.Output {
		return sig.NumOutputs()
	}
	return sig.NumInputs()
}

// fieldsSize estimates the bytes the fields take in a system message.
func fieldsSize(sig *signature.Signature) int {
	n := 0
	for i := range sig.NumInputs() {
		f := sig.Input(i)
		n += 3*len(f.Name) + len(f.Desc) + 48
	}
	for i := range sig.NumOutputs() {
		f := sig.Output(i)
		n += 3*len(f.Name) + len(f.Desc) + 48
	}
	return n
}

// typeNote returns DSPy's translate_field_type note for an output field
// ("" for str), the text after "# note: the value you produce ".
func typeNote(f signature.Field) (string, error) {
	spec := f.Spec
	switch spec.Kind() {
	case signature.KindString:
		return "", nil
	case signature.KindBool:
		return "must be True or False", nil
	case signature.KindInt:
		return "must be a single int value", nil
	case signature.KindFloat:
		return "must be a single float value", nil
	case signature.KindEnum:
		return "must be one of: " + strings.Join(spec.EnumValues(), "; "), nil
	case signature.KindCustom:
		if spec.GoType().Kind() == reflect.String && !spec.GoType().Implements(promptSchemerType) {
			// A text type such as Code: described, not schema'd (DSPy).
			return "", nil
		}
	case signature.KindLiteral:
		lits := spec.Literals()
		parts := make([]string, len(lits))
		for i, l := range lits {
			parts[i] = pyjson.Str(l)
		}
		return "must exactly match (no extra characters) one of: " + strings.Join(parts, "; "), nil
	}
	schema, err := spec.PromptSchema()
	if err != nil {
		return "", fmt.Errorf("adapter: field %q: %w", f.Name, err)
	}
	return "must adhere to the JSON schema: " + renderSchema(schema), nil
}

var promptSchemerType = reflect.TypeFor[signature.PromptSchemer]()

// renderSchema renders a prompt schema as DSPy prints it: json.dumps with
// Python's separators, non-ASCII kept, and every object's keys ordered
// "type" first, then by code point (DSPy's move_type_to_front).
func renderSchema(v any) string {
	var b strings.Builder
	writeSchema(&b, v)
	return b.String()
}

func writeSchema(b *strings.Builder, v any) {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(x, y string) int {
			switch {
			case x == y:
				return 0
			case x == "type":
				return -1
			case y == "type":
				return 1
			}
			return strings.Compare(x, y)
		})
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(pyjson.Quote(k))
			b.WriteString(": ")
			writeSchema(b, v[k])
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			writeSchema(b, e)
		}
		b.WriteByte(']')
	case []string:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(pyjson.Quote(e))
		}
		b.WriteByte(']')
	default:
		s, err := pyjson.Marshal(v)
		if err != nil {
			s = []byte(pyjson.Quote(fmt.Sprint(v)))
		}
		b.Write(s)
	}
}

// writeObjective writes DSPy's format_task_description: the instructions
// dedented, each line (split as str.splitlines splits on \n, \r\n, \r) on
// its own line indented by eight spaces.
func writeObjective(b *strings.Builder, instructions string) {
	b.WriteString("In adhering to this structure, your objective is: ")
	for s := dedent(instructions); len(s) > 0; {
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			i = len(s)
		}
		b.WriteString("\n        ")
		b.WriteString(s[:i])
		if i < len(s) && s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			i++
		}
		s = s[min(i+1, len(s)):]
	}
}

// dedent is Python's textwrap.dedent: it removes the longest common leading
// whitespace of the non-blank lines, and empties whitespace-only lines.
func dedent(s string) string {
	if s == "" {
		return s
	}
	margin, first := "", true
	lines := strings.SplitAfterSeq(s, "\n")
	for l := range lines {
		body := strings.TrimRight(l, "\n")
		if strings.TrimLeft(body, " \t") == "" {
			continue
		}
		indent := body[:len(body)-len(strings.TrimLeft(body, " \t"))]
		switch {
		case first:
			margin, first = indent, false
		case strings.HasPrefix(indent, margin):
		case strings.HasPrefix(margin, indent):
			margin = indent
		default:
			n := 0
			for n < len(margin) && n < len(indent) && margin[n] == indent[n] {
				n++
			}
			margin = margin[:n]
		}
	}
	if margin == "" && !hasBlankIndentedLine(lines) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for l := range lines {
		body, nl := strings.CutSuffix(l, "\n")
		if strings.TrimLeft(body, " \t") == "" {
			body = ""
		} else {
			body = strings.TrimPrefix(body, margin)
		}
		b.WriteString(body)
		if nl {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// hasBlankIndentedLine reports a line of only spaces and tabs, which
// dedent empties.
func hasBlankIndentedLine(lines iter.Seq[string]) bool {
	for l := range lines {
		body := strings.TrimRight(l, "\n")
		if body != "" && strings.TrimLeft(body, " \t") == "" {
			return true
		}
	}
	return false
}

// layout is how an adapter writes a conversation: its system message and
// output reminder (each built once per signature, kept in the signature's
// memo under the layout's address: an adapter's layout is its key), its
// field structure (for a Prompt that changes a piece) and its turns.
type layout struct {
	system    func(*signature.Signature) (string, error)
	structure structureFunc
	reminder  func(*signature.Signature) (string, error)
	user      userFunc
	assistant assistantFunc
}

// layoutMemo is what a layout keeps per signature: the adapter's own
// system message and output reminder, the signature's traits (so that
// Format looks its memo up once), the size of the texts of the latest
// conversation it wrote (the next one's arena starts there), and the
// latest demos it rendered.
type layoutMemo struct {
	system, reminder memoText
	traits           *sigTraits
	names            []string // the fields' names, inputs then outputs (fieldNames)
	size             atomic.Int64
	demos            atomic.Pointer[demoCache]
}

// demoCache is demos as rendered: what every field of every demo held,
// and the messages (nil until the same texts come a second time). A
// Format whose demos hold the same texts (compared as strings: the same
// string is found equal at once, by its address) reuses the messages;
// demos of other values (lists, numbers, Formatters) are rendered every
// time.
type demoCache struct {
	vals []demoVal
	msgs []openai.ChatCompletionMessage
}

// demoVal is what one field of a demo held: a string, or nothing.
type demoVal struct {
	s  string
	ok bool
}

// demoTexts returns what the fields named (a signature's inputs then
// outputs, fieldNames) hold in demos, demo by demo; ok is false when a
// value is not a string.
func demoTexts(names []string, demos []Values) (vals []demoVal, ok bool) {
	vals = make([]demoVal, 0, len(demos)*len(names))
	for _, d := range demos {
		for _, name := range names {
			v, present := d[name]
			s, isStr := v.(string)
			if present && !isStr {
				return nil, false
			}
			vals = append(vals, demoVal{s, present})
		}
	}
	return vals, true
}

// matches reports whether demos hold what c was rendered from, the
// fields named as demoTexts names them.
func (c *demoCache) matches(names []string, demos []Values) bool {
	if len(c.vals) != len(demos)*len(names) {
		return false
	}
	vals := c.vals
	for _, d := range demos {
		for j, name := range names {
			v, present := d[name]
			s, isStr := v.(string)
			if present != vals[j].ok || present && (!isStr || s != vals[j].s) {
				return false
			}
		}
		vals = vals[len(names):]
	}
	return true
}

// fieldNames returns sig's input names, then its output names.
func fieldNames(sig *signature.Signature) []string {
	names := make([]string, 0, sig.NumInputs()+sig.NumOutputs())
	for _, r := range roles {
		for i := range numFields(sig, r) {
			names = append(names, fieldName(sig, r, i))
		}
	}
	return names
}

// formatDemos appends the demos' messages: the ones rendered before when
// the demos hold the same texts as the last ones seen (kept is then true:
// they hold no parts key), else rendered now. Texts seen for the first
// time are remembered, and their messages kept the second time, so that
// demos that change on every call cost little more than rendering.
func (m *layoutMemo) formatDemos(ar *arena, msgs []openai.ChatCompletionMessage, sig *signature.Signature, demos []Values, user userFunc, assistant assistantFunc) (_ []openai.ChatCompletionMessage, kept bool, _ error) {
	if len(demos) == 0 {
		return msgs, false, nil
	}
	last := m.demos.Load()
	seen := last != nil && last.matches(m.names, demos)
	if seen && last.msgs != nil {
		// A kept message holds a role and a text only (see keptMessages):
		// copied as appendMessage writes them.
		for _, k := range last.msgs {
			msgs = appendMessage(msgs, k.Role, k.Content)
		}
		return msgs, true, nil
	}
	start := len(msgs)
	msgs, err := formatDemos(ar, msgs, sig, demos, user, assistant)
	if err != nil {
		return nil, false, err
	}
	switch {
	case seen:
		if kept := keptMessages(msgs[start:]); kept != nil {
			m.demos.Store(&demoCache{vals: last.vals, msgs: kept})
		}
	default:
		if vals, ok := demoTexts(m.names, demos); ok {
			m.demos.Store(&demoCache{vals: vals})
		}
	}
	return msgs, false, nil
}

// keptMessages copies demos' messages for the cache, finished as the
// request's will be (the parts key removed), their texts copied into one
// buffer of their own: the arena they are views of also holds the
// request's inputs, which the cache must not keep alive. It returns nil
// when a message holds content parts: a kept message holds a role and a
// text only (formatDemos writes no other field).
func keptMessages(msgs []openai.ChatCompletionMessage) []openai.ChatCompletionMessage {
	out := slices.Clone(msgs)
	expandAll(out)
	n := 0
	for _, m := range out {
		if m.MultiContent != nil {
			return nil
		}
		n += len(m.Content)
	}
	var b strings.Builder
	b.Grow(n)
	for i := range out {
		start := b.Len()
		b.WriteString(out[i].Content)
		out[i].Content = b.String()[start:]
	}
	return out
}

// memo returns what l keeps for sig, building it once.
func (l *layout) memo(sig *signature.Signature) *layoutMemo {
	return sig.Memo(l, func() any {
		m := &layoutMemo{}
		m.system.text, m.system.err = l.system(sig)
		m.reminder.text, m.reminder.err = l.reminder(sig)
		m.traits = traitsOfSig(sig)
		m.names = fieldNames(sig)
		return m
	}).(*layoutMemo)
}

// requirements returns the output requirements l's Format writes with the
// pieces of p.
func (l *layout) requirements(p *Prompt, sig *signature.Signature) (string, error) {
	return p.requirements(sig, l.memo(sig).reminder)
}

// format renders the system message, the demos, the conversation history
// and the request, with the pieces of p (nil keeps the adapter's).
func (l *layout) format(p *Prompt, sig *signature.Signature, demos []Values, inputs Values, nativeTools bool) ([]openai.ChatCompletionMessage, error) {
	if sig == nil {
		return nil, errNilSignature
	}
	m := l.memo(sig)
	sys, err := p.systemMessage(sig, m.system, l.structure)
	if err != nil {
		return nil, err
	}
	reminder, err := p.requirements(sig, m.reminder)
	if err != nil {
		return nil, err
	}
	msgs := make([]openai.ChatCompletionMessage, 0, 2+2*len(demos))
	msgs = appendMessage(msgs, openai.ChatMessageRoleSystem, sys)
	inputs, err = convertInputsOf(sig, m.traits, inputs)
	if err != nil {
		return nil, err
	}
	ar := newArena()
	ar.grow(sig, demos, int(m.size.Load()))
	defer ar.release(&m.size)
	msgs, kept, err := m.formatDemos(ar, msgs, sig, demos, l.user, l.assistant)
	if err != nil {
		return nil, err
	}
	scan := 1 // the system message is written from the signature alone: no key
	if kept {
		scan = len(msgs)
	}
	if msgs, err = l.formatTurns(ar, msgs, sig, m.traits.history, inputs, reminder, nativeTools); err != nil {
		return nil, err
	}
	expandAll(msgs[scan:])
	return msgs, nil
}

// memoText is a kept text, or the error building it gave.
type memoText struct {
	text string
	err  error
}

// arena is one buffer for the texts of a conversation's messages: each
// text is a view of it (strings.Builder only appends, so a view never
// changes), and Format allocates the texts of all its messages at once.
type arena struct{ b strings.Builder }

// since returns what was written from start on, surrounding white space
// trimmed.
func (a *arena) since(start int) string { return strings.TrimSpace(a.b.String()[start:]) }

// grow makes room for a conversation with these demos: about the size of
// the latest one (hint, 0 for none), else an estimate (iterating the
// values would cost more than a regrowth).
func (a *arena) grow(sig *signature.Signature, demos []Values, hint int) {
	if hint > 0 {
		a.b.Grow(hint + hint/8)
		return
	}
	fields := sig.NumInputs() + sig.NumOutputs()
	a.b.Grow(512 + (len(demos)+1)*fields*112)
}

// arenas keeps arenas between conversations: an arena is handed to the
// adapters' user and assistant functions, function values, so one made
// for each Format would be allocated on the heap.
var arenas = sync.Pool{New: func() any { return new(arena) }}

// newArena returns an empty arena.
func newArena() *arena { return arenas.Get().(*arena) }

// release records the size of what a wrote in size (see record), forgets
// a's buffer (the texts written, views of it, keep it alive as long as
// they need it) and returns a to the pool.
func (a *arena) release(size *atomic.Int64) {
	a.record(size)
	a.b = strings.Builder{}
	arenas.Put(a)
}

// record keeps the size of what a wrote in size, the next hint, when it
// left the hint's room or used less than half of it (so that concurrent
// calls of about the same size do not all write it).
func (a *arena) record(size *atomic.Int64) {
	n, hint := int64(a.b.Len()), size.Load()
	if n > hint+hint/8 || n < hint/2 {
		size.Store(n)
	}
}
