package adapter_test

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/signature"
)

// A string the reply writes as valid JSON reads as what its escapes
// state, once decoded, also where the reply around it needs repair: the
// repairer's file-path heuristic (a string holding '/' or '\' read as a
// Windows path) kept the backslashes of \"k\" in a key of an object left
// open, so the key read as <entry key=\"k\">v</entry>.
func TestRepairKeepsStatedStrings(t *testing.T) {
	sig, err := signature.New("", []signature.Field{{Name: "question"}},
		[]signature.Field{{Name: "text", Type: reflect.TypeFor[[]rtXMLish]()}})
	require.NoError(t, err)
	want := []rtXMLish{{Item: `\n`, Entry: []string{}, Key: map[string]string{`<entry key="k">v</entry>`: "<think>t</think>"}}}
	for _, reply := range []string{
		// The item object is never closed; a trailing comma.
		`{"data": {}, "text": [{"item": "\\n", "entry": [], "key": {"<entry key=\"k\">v</entry>": "<think>t</think>",}], "key": "a1"}`,
		// Only a trailing comma to repair.
		`{"text": [{"item": "\\n", "entry": [], "key": {"<entry key=\"k\">v</entry>": "<think>t</think>",}}]}`,
		// Python's True beside it.
		`{"text": [{"item": "\\n", "entry": [], "key": {"<entry key=\"k\">v</entry>": "<think>t</think>"}}], "ok": True}`,
	} {
		vals, err := adapter.JSON{}.Parse(sig, reply)
		require.NoError(t, err, reply)
		assert.Equal(t, want, vals["text"], reply)
	}
	// The same value in a Chat section and read by ParseValue.
	for _, text := range []string{
		`[{"item": "\\n", "entry": [], "key": {"<entry key=\"k\">v</entry>": "<think>t</think>",}}]`,
		`[{"item": "\\n", "entry": [], "key": {"<entry key=\"k\">v</entry>": "<think>t</think>"}, "x": True}]`,
		`Here: [{"item": "\\n", "entry": [], "key": {"<entry key=\"k\">v</entry>": "<think>t</think>",}}]`,
		// What only the repairer reads: a comment, a missing comma, undefined.
		"[{\"item\": \"\\\\n\", \"entry\": [], \"key\": {\"<entry key=\\\"k\\\">v</entry>\": \"<think>t</think>\"}} // done\n]",
		`[{"item": "\\n" "entry": [], "key": {"<entry key=\"k\">v</entry>": "<think>t</think>"}}]`,
		`[{"item": "\\n", "entry": [], "key": {"<entry key=\"k\">v</entry>": "<think>t</think>"}, "x": undefined}]`,
	} {
		v, err := adapter.ParseValue(text, sig.Outputs()[0])
		require.NoError(t, err, text)
		assert.Equal(t, want, v, text)
		vals, err := adapter.Chat{}.Parse(sig, "[[ ## text ## ]]\n"+text+"\n\n[[ ## completed ## ]]")
		require.NoError(t, err, text)
		assert.Equal(t, want, vals["text"], text)
	}
	// Paths of files keep their escapes as JSON states them too.
	paths, err := signature.Parse("q -> paths: list[str]")
	require.NoError(t, err)
	for _, text := range []string{
		`["C:\\new\\table.txt", "/usr/lib/x.so", "a\"b/c.txt",]`,
		`["C:\\new\\table.txt", "/usr/lib/x.so", "a\"b/c.txt"] // three`,
	} {
		v, err := adapter.ParseValue(text, paths.Outputs()[0])
		require.NoError(t, err, text)
		assert.Equal(t, []string{`C:\new\table.txt`, "/usr/lib/x.so", `a"b/c.txt`}, v, text)
	}
}
