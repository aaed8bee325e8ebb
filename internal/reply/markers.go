package reply

import (
	"strings"
	"unicode"

	"github.com/sigwire/adapter/signature"
)

// Mark is one field marker found in a reply.
type Mark struct {
	Start, End int  // the marker's extent; its section's text starts at End
	Field      int  // output index; negative for an input or unknown name (-1) or the "completed" marker (-2)
	LineStart  bool // nothing but decoration before it on its line
	Strong     bool // brackets on both sides: a marker wherever it stands
	nameStart  int  // the name as written is text[nameStart:nameEnd]
	nameEnd    int
}

// Name returns the marker's name as written in text.
func (m Mark) Name(text string) string { return text[m.nameStart:m.nameEnd] }

// FindMarker finds the next marker at or after pos. It reads the forms
// models write:
//
//	[[ ## answer ## ]]   [[## answer ##]]   **[[ ## answer ## ]]**
//	### [[ ## answer ## ]]   [[ ## Answer ## ]]:   ## answer ##
//	[[ ## answer ## ]   [ ## answer ## ]]   [[ ## answer # ]]   [[ answer ## ]]
//
// A marker with brackets on both sides and hashes on both sides of the
// name (Strong) is reported wherever it stands and with any name; with
// brackets on both sides but hashes on one side, wherever it stands when
// it names a field; any other form (hashes on both sides, or a bracket and
// a hash) only at the start of its line, naming a field. Whether a marker
// that is not at the start of its line counts is the section reader's
// decision (see Scan). A marker found never starts before pos: its
// decoration cannot reach back into text already read.
func FindMarker(sig *signature.Signature, s string, pos int) (Mark, bool) {
	var m Mark
	ok := findMarker(sig, s, pos, &m)
	return m, ok
}

// findMarker is FindMarker writing the marker found to *m (a Mark is
// seven words: returned through two calls, its copies cost a third of the
// scan of a short reply).
func findMarker(sig *signature.Signature, s string, pos int, m *Mark) bool {
	lo := pos
	for pos < len(s) {
		j := strings.IndexByte(s[pos:], '#')
		if j < 0 {
			return false
		}
		i := pos + j
		run := i
		for run < len(s) && s[run] == '#' {
			run++
		}
		if (run-i > 1 || nearBracket(s, i, run)) && run-i <= maxHashes && markerAt(sig, s, i, run, lo, m) {
			return true
		}
		pos = run
	}
	return false
}

// nearBracket reports a '[' just before s[i:run] or a ']' just after it
// (blanks between): a single hash is part of a marker only in a bracketed
// form ("[[ # answer ## ]]", "[[ ## answer # ]]").
func nearBracket(s string, i, run int) bool {
	b := i
	for b > 0 && i-b < 3 && (s[b-1] == ' ' || s[b-1] == '\t') {
		b--
	}
	if b > 0 && s[b-1] == '[' {
		return true
	}
	e := skipBlank(s, run)
	return e < len(s) && e-run < 3 && s[e] == ']'
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func skipBlank(s string, k int) int {
	for k < len(s) && (s[k] == ' ' || s[k] == '\t') {
		k++
	}
	return k
}

func skipBlankBack(s string, k, lo int) int {
	for k > lo && (s[k-1] == ' ' || s[k-1] == '\t') {
		k--
	}
	return k
}

// maxMarker bounds a marker in bytes, from its first bracket or hash (or,
// at a line start, the decoration before it) to its last closing bracket
// or hash, not counting the name when it is a field's: a longer one is
// text, and decoration that would make it longer leaves the marker
// mid-line. It also bounds the blanks between a marker and a decoration
// after it (" :"). A field stream therefore never holds back more than
// markerBound as a possible marker.
const maxMarker = 96

// markerBound is the longest a marker of sig can be: maxMarker and the
// longest field name.
func markerBound(sig *signature.Signature) int {
	n := len("completed")
	for i := range sig.NumInputs() {
		n = max(n, len(sig.InputName(i)))
	}
	for i := range sig.NumOutputs() {
		n = max(n, len(sig.OutputName(i)))
	}
	return maxMarker + n
}

// maxHashes bounds a marker's run of hashes ("###" is common, more is a
// heading rule or noise).
const maxHashes = 4

// markerAt parses a marker around the run of hashes s[i:run]: the name
// after it (the run opens the marker) or, failing that, before it (the run
// closes "[[ answer ## ]]"). The marker never starts before lo. It
// reports whether there is one, written to *m.
func markerAt(sig *signature.Signature, s string, i, run, lo int, m *Mark) bool {
	return canonicalMarkerAt(sig, s, i, run, lo, m) || anyMarkerAt(sig, s, i, run, lo, m)
}

// canonicalMarkerAt reads the marker as DSPy writes it, the common case:
// "[[ ## name ## ]]" alone on its line (the run s[i:run] its opening
// hashes), found as anyMarkerAt finds it (FuzzCanonicalMarker) without
// its rules for the other forms. It reports false for anything else.
func canonicalMarkerAt(sig *signature.Signature, s string, i, run, lo int, m *Mark) bool {
	const open, closing = "[[ ", " ## ]]"
	start, n0 := i-len(open), run+1
	if run-i != 2 || start < lo || s[start:i] != open || start > 0 && s[start-1] != '\n' || n0 >= len(s) || s[run] != ' ' {
		return false
	}
	k := n0
	for k < len(s) && isWordByte(s[k]) {
		k++
	}
	end := k + len(closing)
	if k == n0 || !strings.HasPrefix(s[k:], closing) || end < len(s) && s[end] != '\n' {
		return false
	}
	name := s[n0:k]
	field := outputIndex(sig, name)
	limit := maxMarker // as anyMarkerAt bounds it
	if field != otherField || isInput(sig, name) {
		limit += len(name)
	}
	if end-start > limit {
		return false
	}
	*m = Mark{Start: start, End: end, Field: field, LineStart: true, Strong: true, nameStart: n0, nameEnd: k}
	return true
}

// anyMarkerAt is markerAt for every form of marker FindMarker reads.
func anyMarkerAt(sig *signature.Signature, s string, i, run, lo int, m *Mark) bool {
	if run-i > maxHashes {
		return false
	}
	// Forward: the run opens the marker.
	k := skipBlank(s, run)
	n0 := k
	for k < len(s) && isWordByte(s[k]) {
		k++
	}
	h1, h2 := run-i, 0
	var nameStart, nameEnd, end, start int
	if k > n0 {
		nameStart, nameEnd = n0, k
		k = skipBlank(s, k)
		for k < len(s) && s[k] == '#' && h2 < maxHashes {
			k++
			h2++
		}
		end = k
		start = i
	} else {
		// Backward: the run closes a marker whose name comes before it.
		ne := skipBlankBack(s, i, lo)
		ns := ne
		for ns > lo && isWordByte(s[ns-1]) {
			ns--
		}
		if ns == ne {
			return false
		}
		nameStart, nameEnd = ns, ne
		h1, h2 = 0, run-i
		end, start = run, ns
	}
	// Closing brackets, then decoration after the marker: ":", "**", "__".
	e := skipBlank(s, end)
	rb := 0
	for rb < 3 && e < len(s) && s[e] == ']' {
		e++
		rb++
	}
	if rb > 0 || h2 > 0 {
		end = e
	}
	core := end
	end = markerDecorationEnd(s, end)

	// Opening brackets, then decoration before: "**", heading hashes, quote
	// marks, up to the line start.
	start = skipBlankBack(s, start, lo)
	lb := 0
	for lb < 3 && start > lo && s[start-1] == '[' {
		start--
		lb++
	}
	if lb == 0 {
		start = max(i, lo)
		if h1 == 0 {
			start = nameStart
		}
	}
	name := s[nameStart:nameEnd]
	field := outputIndex(sig, name)
	known := field != otherField || isInput(sig, name)
	limit := maxMarker // a known name does not count: see markerBound
	if known {
		limit += len(name)
	}
	b := decorationStart(s, start)
	lineStart := (b == 0 || s[b-1] == '\n' || s[b-1] == '\r') && core-b <= limit
	if lineStart {
		start = b
	} else {
		for k := 0; k < 2 && start > lo && (s[start-1] == '*' || s[start-1] == '_' || s[start-1] == '`'); k++ {
			start--
		}
	}
	start = max(start, lo)
	if core-start > limit {
		return false
	}
	bracketed := lb > 0 && rb > 0
	strong := bracketed && h1 > 0 && h2 > 0
	switch {
	case strong:
	case bracketed && known:
	case lineStart && known && (h1 > 0 && h2 > 0 || lb > 0 || rb > 0 && h1 > 0):
		// (A marker that starts with its name needs an opening bracket:
		// a field stream holds back brackets and hashes, never words.)
	default:
		return false
	}
	*m = Mark{Start: start, End: end, Field: field, LineStart: lineStart, Strong: strong, nameStart: nameStart, nameEnd: nameEnd}
	return true
}

// decorationStart walks back from s[b] over what may decorate a marker
// at a line start: blanks, '*', '#', '>', '_', '`', '-', '+' and list
// numbers ("1. [[ ## answer ## ]]", "2) …"). It returns where that run
// begins: a line start when the marker is at one.
func decorationStart(s string, b int) int {
	for b > 0 && s[b-1] != '\n' && s[b-1] != '\r' {
		switch s[b-1] {
		case ' ', '\t', '*', '#', '>', '_', '`', '-', '+':
			b--
			continue
		case '.', ')':
			if d := digitsBack(s, b-1); d > 0 && d <= 3 {
				b -= 1 + d
				continue
			}
		}
		return b
	}
	return b
}

// lineDecoration reports whether line, the start of a line so far, may
// still become the decoration before a marker at the line start (the rule
// markers are read by): only what decorationStart walks over, the last
// list number possibly still being written ("12").
func lineDecoration(line string) bool {
	d := digitsBack(line, len(line))
	return d <= 3 && decorationStart(line, len(line)-d) == 0
}

// digitsBack counts the ASCII digits just before s[i].
func digitsBack(s string, i int) int {
	n := 0
	for i-n > 0 && s[i-n-1] >= '0' && s[i-n-1] <= '9' {
		n++
	}
	return n
}

// markerDecorationEnd returns where the decoration after a marker ends:
// ":", "**", "__", and a single '*', '_', '`' or dash ("]]*", "]]` -")
// when a blank or the line's end follows it (so "-5" keeps its sign).
func markerDecorationEnd(s string, end int) int {
	for end < len(s) {
		switch c := s[end]; {
		case c == ':':
			end++
		case strings.HasPrefix(s[end:], "**"), strings.HasPrefix(s[end:], "__"):
			end += 2
		case c == '*' || c == '_' || c == '`' || c == '-':
			if end+1 < len(s) && !isBlankOrEOL(s[end+1]) && !strings.ContainsRune("*_`:", rune(s[end+1])) {
				return end
			}
			end++
		case c == ' ' || c == '\t':
			k := skipBlank(s, end)
			if k-end <= maxMarker && k < len(s) && strings.IndexByte(":*_`-", s[k]) >= 0 && (k+1 >= len(s) || isBlankOrEOL(s[k+1]) || s[k] == ':') {
				end = k
				continue
			}
			return end
		default:
			return end
		}
	}
	return end
}

// mayGrow reports whether the text after a marker's end, tail, may still
// become part of the marker (more closing brackets or hashes, or the
// decoration markerDecorationEnd reads) as more text arrives: it is short
// and holds only such characters.
func mayGrow(tail string) bool {
	if len(tail) > maxMarker {
		return false
	}
	for i := 0; i < len(tail); i++ {
		if strings.IndexByte(" \t:*_`-]#", tail[i]) < 0 {
			return false
		}
	}
	return true
}

func isBlankOrEOL(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// sectionText is a section's value: the text after its marker, trimmed.
// Text on the marker's own line is trimmed on its own as well, as DSPy
// strips the header line's remainder ("[[ ## a ## ]] x  \n y" is "x\n y").
func sectionText(seg string) string {
	nl := strings.IndexByte(seg, '\n')
	if nl > 0 {
		if head := strings.TrimSpace(seg[:nl]); head != "" && len(strings.TrimRightFunc(seg[:nl], unicode.IsSpace)) < nl {
			if rest := strings.TrimRightFunc(seg[nl:], unicode.IsSpace); rest != "" {
				return head + rest
			}
		}
	}
	return strings.TrimSpace(seg)
}

// maxBuffered is how many markers a scan keeps from its first pass; a
// reply with more is scanned twice.
const maxBuffered = 16

// markerScan is the first pass over a reply's markers: where the reply
// ends, and which outputs have a marker at the start of a line.
type markerScan struct {
	sig      *signature.Signature
	text     string
	buf      [maxBuffered]Mark
	n        int
	overflow bool
	end      int      // the first line-start completed marker, or len(text)
	line     streamed // outputs with a line-start marker before end
	marked   streamed // outputs with any marker before end
	nMarked  int      // how many outputs marked holds
	lastLine int      // start of the last line-start output marker before end, or -1
}

func (ms *markerScan) init(sig *signature.Signature, text string) {
	ms.sig, ms.text, ms.end, ms.lastLine = sig, text, len(text), -1
	var past Mark // a marker past the full buffer
	for pos := 0; ; {
		m := &past
		if ms.n < len(ms.buf) {
			m = &ms.buf[ms.n] // read in place
		}
		if !findMarker(sig, text, pos, m) {
			return
		}
		if m.Field == completedField && m.LineStart {
			ms.end = m.Start
			return
		}
		if m.Field >= 0 {
			if !ms.marked.again(m.Field) {
				ms.marked.mark(m.Field)
				ms.nMarked++
			}
			if m.LineStart {
				ms.line.mark(m.Field)
				ms.lastLine = m.Start
			}
		}
		if ms.n < len(ms.buf) {
			ms.n++
		} else {
			ms.overflow = true
		}
		pos = m.End
	}
}

// counts reports whether a marker found by the first pass takes effect.
// A marker at the start of its line always does (an input or unknown name
// ends the section before it, as in DSPy). One in the middle of a line is
// recovery only: an output marker counts when that output has no marker
// at the start of a line, a completed marker when no line-start output
// marker follows it; any other mid-line marker is text. So text a model
// quotes (an echoed input holding "[[ ## verdict ## ]] x [[ ## completed
// ## ]]") never overrides its own answer.
func (ms *markerScan) counts(m *Mark) bool {
	switch {
	case m.LineStart:
		return true
	case m.Field >= 0:
		return !ms.line.again(m.Field)
	case m.Field == completedField:
		return m.Start > ms.lastLine
	}
	return false
}

// markIter walks the markers before the end, in order: from the first
// pass's buffer, or scanning again when the buffer overflowed.
type markIter struct {
	ms     *markerScan
	i, pos int
	past   Mark // a marker past the full buffer, read again
}

// next returns the next marker, nil after the last: a view of the first
// pass's buffer or of it.past, good until the next call (see findMarker).
func (it *markIter) next() *Mark {
	ms := it.ms
	if !ms.overflow {
		if it.i >= ms.n {
			return nil
		}
		it.i++
		return &ms.buf[it.i-1]
	}
	if !findMarker(ms.sig, ms.text, it.pos, &it.past) || it.past.Start >= ms.end {
		return nil
	}
	it.pos = it.past.End
	return &it.past
}

// sections files the text after each counting marker under its output,
// up to the next counting marker or the end. It reports whether any output
// marker counted; a field given twice with different values is
// errAmbiguous. unknown reports a line-start marker with a name that is
// neither an output nor an input (a rename candidate).
//
// A reply may mix styles: an output no marker names may be given with a
// label at the start of a line, as the labels reader reads one ("##
// title", "**Title:** 370", "Title: 370") but naming the output by its
// whole name (see outputLabel), outside a code block. Such a
// label ends the section before it, as a marker would, and its text is
// the output's (none when it is empty: the output stays missing). So the
// label is never text of the field before it, and the output it names is
// never missing when the reply states it. A label of an output that a
// marker names is text, as is one of an input.
func (ms *markerScan) sections(fields []Field) (found, unknown bool, err error) {
	cur, curSrc, curStart := otherField, Marker, 0
	it := markIter{ms: ms}
	var labels labelIter
	if ms.nMarked < ms.sig.NumOutputs() {
		labels = labelIter{ms: ms, on: true}
	}
	m := it.next()
	l, lok := labels.next()
	for {
		for m != nil && !ms.counts(m) {
			m = it.next()
		}
		for lok && l.Start < curStart {
			l, lok = labels.next() // inside the marker just read
		}
		if m == nil && !lok {
			break
		}
		next := m
		if lok && (m == nil || l.Start < m.Start) {
			next = &l
		}
		if cur >= 0 {
			if err := setSection(fields, cur, curSrc, sectionText(ms.text[curStart:max(curStart, next.Start)])); err != nil {
				return found, unknown, err
			}
		}
		if next == &l {
			cur, curSrc, curStart = l.Field, Label, l.End
			l, lok = labels.next()
			continue
		}
		if m.Field == completedField {
			return found, unknown, nil
		}
		cur, curSrc, curStart = m.Field, Marker, m.End
		found = found || m.Field >= 0
		unknown = unknown || m.Field == otherField && !isInput(ms.sig, m.Name(ms.text))
		m = it.next()
	}
	if cur >= 0 {
		err = setSection(fields, cur, curSrc, sectionText(ms.text[curStart:ms.end]))
	}
	return found, unknown, err
}

// setSection is setText for a marker's section; a label's files only
// text (see sections).
func setSection(fields []Field, i int, src Source, v string) error {
	if src == Label && v == "" {
		return nil
	}
	return setText(fields, i, src, v)
}

// outputLabel is labelAt for a label in a marker reply: one whose words
// are an output's name ("Title:", "## Final answer" for final_answer), not
// only its last words ("Here is the answer:" is prose there).
func outputLabel(sig *signature.Signature, s string, start, end int) (Mark, bool) {
	m, ok := labelAt(sig, s, start, end)
	if !ok || m.Field < 0 {
		return Mark{}, false
	}
	name := strings.Join(strings.Fields(m.Name(s)), "_")
	if outputIndex(sig, name) != m.Field {
		return Mark{}, false
	}
	return m, true
}

// labelIter walks, in order, the labels before a marker reply's end that
// name an output no marker names (see sections), outside code blocks.
type labelIter struct {
	ms    *markerScan
	on    bool // some output has no marker
	pos   int
	fence bool // inside a code block
}

func (it *labelIter) next() (Mark, bool) {
	if !it.on {
		return Mark{}, false
	}
	ms := it.ms
	for it.pos < ms.end {
		start := it.pos
		end := ms.end
		if nl := strings.IndexByte(ms.text[start:end], '\n'); nl >= 0 {
			end = start + nl
		}
		it.pos = end + 1
		if t := strings.TrimLeft(ms.text[start:end], " \t"); strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			it.fence = !it.fence
			continue
		}
		if it.fence {
			continue
		}
		if m, ok := outputLabel(ms.sig, ms.text, start, end); ok && !ms.marked.again(m.Field) {
			return m, true
		}
	}
	it.on = false
	return Mark{}, false
}

// renamedSection finds the section of a line-start marker whose unknown
// name is a rename of the one missing output.
func (ms *markerScan) renamedSection(missing int) (string, bool) {
	var names, texts []string
	cur, curStart := -1, 0
	it := markIter{ms: ms}
	for {
		m := it.next()
		if m == nil {
			if cur >= 0 {
				texts[cur] = sectionText(ms.text[curStart:ms.end])
			}
			break
		}
		if !ms.counts(m) {
			continue
		}
		if cur >= 0 {
			texts[cur] = sectionText(ms.text[curStart:m.Start])
			cur = -1
		}
		if m.Field == completedField {
			break
		}
		if m.Field == otherField && !isInput(ms.sig, m.Name(ms.text)) {
			names = append(names, m.Name(ms.text))
			texts = append(texts, "")
			cur, curStart = len(names)-1, m.End
		}
	}
	name, ok := renameTarget(ms.sig, missing, names)
	if !ok {
		return "", false
	}
	text := ""
	for i, n := range names {
		switch {
		case n != name || texts[i] == "":
		case text == "":
			text = texts[i]
		case texts[i] != text:
			return "", false // two different values: the reply does not say
		}
	}
	return text, true
}

// setText files a section's text under output i: the first non-empty text
// wins; a second, different non-empty text is errAmbiguous.
func setText(fields []Field, i int, src Source, v string) error {
	f := &fields[i]
	switch {
	case f.Source == Missing || f.Text == "":
		f.Source, f.Text = src, v
	case v != "" && v != f.Text:
		return &Error{Field: i, Err: wrapf(errAmbiguous, "the field appears twice with different values")}
	}
	return nil
}

// findLabel finds the next "Answer: …" label (also "**Answer:**",
// "Final answer:", a heading "## Answer" alone on its line) that starts a
// line and names a field, for replies written without markers. Input
// names end a section, as with markers.
func findLabel(sig *signature.Signature, s string, pos int) (Mark, bool) {
	for pos < len(s) {
		end := len(s)
		if nl := strings.IndexByte(s[pos:], '\n'); nl >= 0 {
			end = pos + nl
		}
		if m, ok := labelAt(sig, s, pos, end); ok {
			return m, true
		}
		pos = end + 1
	}
	return Mark{}, false
}

// maxLabel bounds a label's length.
const maxLabel = 40

// labelAt parses a label at the start of the line s[start:end].
func labelAt(sig *signature.Signature, s string, start, end int) (Mark, bool) {
	decor := func(k int) int {
		for k < end && strings.IndexByte(" \t*_#>", s[k]) >= 0 {
			k++
		}
		return k
	}
	k := decor(start)
	decorated := k > start && strings.ContainsAny(s[start:k], "*_#")
	n0 := k
	for k < end && k-n0 < maxLabel && (isWordByte(s[k]) || s[k] == ' ') {
		k++
	}
	name := strings.Trim(s[n0:k], " _")
	k = decor(k)
	lineEnd := strings.TrimRight(s[k:end], " \t\r*_#:") == ""
	switch {
	case name == "" || k >= end && !decorated:
		return Mark{}, false
	case k < end && s[k] == ':':
		k++
		for k+1 < end && (s[k:k+2] == "**" || s[k:k+2] == "__") {
			k += 2
		}
	case decorated && lineEnd:
		k = end // a heading or bold line naming the field: "## Answer"
	default:
		return Mark{}, false
	}
	field, ok := labelField(sig, name)
	if !ok {
		return Mark{}, false
	}
	return Mark{Start: start, End: k, Field: field, LineStart: true, nameStart: n0, nameEnd: n0 + len(name)}, true
}

// labelField resolves a label's words to a field: all of them ("Final
// answer" as final_answer), else the last ones ("Final answer" as answer);
// an input name counts (it ends a section).
func labelField(sig *signature.Signature, name string) (int, bool) {
	words := strings.Fields(name)
	for i := range words {
		cand := strings.Join(words[i:], "_")
		field := outputIndex(sig, cand)
		switch {
		case field == completedField:
			return 0, false
		case field >= 0:
			return field, true
		case i == 0 && isInput(sig, cand):
			return otherField, true
		}
	}
	return 0, false
}

// labels files the sections of "Answer: …" labels; it reports whether any
// output label was found. The reply ends at a completed marker (see
// completedEnd).
func labels(sig *signature.Signature, text string, fields []Field) (bool, error) {
	text = text[:completedEnd(sig, text)]
	any := false
	cur, curStart := otherField, 0
	for pos := 0; ; {
		m, ok := findLabel(sig, text, pos)
		end := len(text)
		if ok {
			end = m.Start
		}
		if cur >= 0 {
			if err := setText(fields, cur, Label, sectionText(text[curStart:end])); err != nil {
				return any, err
			}
		}
		if !ok {
			return any, nil
		}
		cur, curStart, pos = m.Field, m.End, m.End
		any = any || m.Field >= 0
	}
}

// completedEnd returns where a reply with no output marker ends: at its
// first completed marker, at the start of a line or in the middle of one
// (as in a reply in markers, where one counts after the last line-start
// output marker: see markerScan.counts), or at its end.
func completedEnd(sig *signature.Signature, text string) int {
	for pos := 0; ; {
		m, ok := FindMarker(sig, text, pos)
		if !ok {
			return len(text)
		}
		if m.Field == completedField {
			return m.Start
		}
		pos = m.End
	}
}
