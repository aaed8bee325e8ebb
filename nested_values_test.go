package adapter_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/signature"
)

// A container value is read from the outermost bracket span the text
// holds. When that span is not readable as the field's type, the value is
// an error: never a value built from an inner fragment, and never a list
// of lists made by turning each scalar item of a flat list into a
// one-item list.
func TestNestedListNeverFromInnerSpan(t *testing.T) {
	sig, err := signature.Parse("q -> x: list[list[int]]")
	require.NoError(t, err)
	for _, section := range []string{
		"[[1, 2], [3, x]]",
		"[[1, 2], [3, 4], oops]",
		"Answer: [[1, 2], [3, None, x]]",
		"[1, 2]]",         // the outer '[' missing
		"[[1, 2], 3, 4]]", // an inner '[' missing
		"[1, 2]",          // a flat list is not a list of lists
		`["a", "b"]`,
	} {
		completion := "[[ ## x ## ]]\n" + section + "\n\n[[ ## completed ## ]]"
		v, err := adapter.Chat{}.Parse(sig, completion)
		assert.Error(t, err, "%q read as %v", section, v)
		v2, err := adapter.ParseValue(section, sig.Outputs()[0])
		assert.Error(t, err, "%q read as %v", section, v2)
	}
	// What the lenient reading keeps: a lone scalar for a field's own
	// list, a Python literal, a missing final bracket.
	for section, want := range map[string]any{
		"[[1, 2], [3, 4]]":         [][]int{{1, 2}, {3, 4}},
		"Answer: [[1, 2], [3]].":   [][]int{{1, 2}, {3}},
		"[[1, 2], [3, 4]":          [][]int{{1, 2}, {3, 4}},
		"[(1, 2), (3,)]":           [][]int{{1, 2}, {3}},
		"```json\n[[1], [2]]\n```": [][]int{{1}, {2}},
	} {
		v, err := adapter.ParseValue(section, sig.Outputs()[0])
		require.NoError(t, err, section)
		assert.Equal(t, want, v, section)
	}
	flat, err := signature.Parse("q -> x: list[int]")
	require.NoError(t, err)
	v, err := adapter.ParseValue("7", flat.Outputs()[0])
	require.NoError(t, err)
	assert.Equal(t, []int{7}, v)
}

// TestCorruptedContainersProperty: for list, dict and nested types, a
// valid rendering with one inner item corrupted (a bare word for a
// scalar, a bracket dropped, an item of the wrong shape added) reads as
// an error or as the original value — never as a different value.
func TestCorruptedContainersProperty(t *testing.T) {
	type pair struct {
		Name string `json:"name"`
		Age  int    `json:"age"`
	}
	kinds := []reflect.Type{
		reflect.TypeFor[[]int](),
		reflect.TypeFor[[][]int](),
		reflect.TypeFor[[][]string](),
		reflect.TypeFor[[][][]int](),
		reflect.TypeFor[map[string][]int](),
		reflect.TypeFor[[]map[string]int](),
		reflect.TypeFor[map[string]map[string]int](),
		reflect.TypeFor[[]pair](),
		reflect.TypeFor[map[string][][]bool](),
		reflect.TypeFor[[][]float64](),
	}
	rng := rand.New(rand.NewPCG(30, 21))
	checked := 0
	for _, typ := range kinds {
		sig, err := signature.New("", []signature.Field{{Name: "q"}}, []signature.Field{{Name: "x", Type: typ}})
		require.NoError(t, err)
		field := sig.Outputs()[0]
		for range 25 {
			orig := genContainerValue(rng, typ, 0)
			text := renderValue(orig)
			got, err := adapter.ParseValue(text, field)
			require.NoError(t, err, "%s: %s", typ, text)
			require.Equal(t, orig.Interface(), got, "%s: %s", typ, text)
			for _, bad := range corruptions(text) {
				if vals, err := (adapter.JSON{}).Parse(sig, `{"x": `+bad+`}`); err == nil && !reflect.DeepEqual(vals["x"], orig.Interface()) {
					t.Errorf("JSON %s: %q read as %#v; the original was %s", typ, bad, vals["x"], text)
				}
				for _, in := range []string{bad, "The answer is " + bad + "."} {
					checked++
					if v, err := adapter.ParseValue(in, field); err == nil && !reflect.DeepEqual(v, orig.Interface()) {
						t.Errorf("%s: %q read as %#v; the original was %s", typ, in, v, text)
					}
					reply := "[[ ## x ## ]]\n" + in + "\n\n[[ ## completed ## ]]"
					if vals, err := (adapter.Chat{}).Parse(sig, reply); err == nil && !reflect.DeepEqual(vals["x"], orig.Interface()) {
						t.Errorf("Chat %s: %q read as %#v; the original was %s", typ, in, vals["x"], text)
					}
				}
			}
		}
	}
	t.Logf("%d corrupted texts checked", checked)
}

// genContainerValue builds a random non-empty value of typ.
func genContainerValue(rng *rand.Rand, typ reflect.Type, depth int) reflect.Value {
	words := []string{"alpha", "beta", "gamma", "delta", "omega"}
	v := reflect.New(typ).Elem()
	switch typ.Kind() {
	case reflect.Int:
		v.SetInt(int64(rng.IntN(200) - 50))
	case reflect.Float64:
		v.SetFloat(float64(rng.IntN(400)-100) / 4)
	case reflect.Bool:
		v.SetBool(rng.IntN(2) == 0)
	case reflect.String:
		v.SetString(words[rng.IntN(len(words))])
	case reflect.Slice:
		n := 1 + rng.IntN(3)
		v.Set(reflect.MakeSlice(typ, n, n))
		for i := range n {
			v.Index(i).Set(genContainerValue(rng, typ.Elem(), depth+1))
		}
	case reflect.Map:
		v.Set(reflect.MakeMap(typ))
		for i := range 1 + rng.IntN(3) {
			v.SetMapIndex(reflect.ValueOf(fmt.Sprintf("k%d", i)), genContainerValue(rng, typ.Elem(), depth+1))
		}
	case reflect.Struct:
		for i := range typ.NumField() {
			v.Field(i).Set(genContainerValue(rng, typ.Field(i).Type, depth+1))
		}
	}
	return v
}

// renderValue writes v as JSON with ", " and ": " separators, as models
// and Python's json.dumps write it.
func renderValue(v reflect.Value) string {
	switch v.Kind() {
	case reflect.Int:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Float64:
		s := strconv.FormatFloat(v.Float(), 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.String:
		return strconv.Quote(v.String())
	case reflect.Slice:
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = renderValue(v.Index(i))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case reflect.Map:
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = strconv.Quote(k.String()) + ": " + renderValue(v.MapIndex(k))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case reflect.Struct:
		parts := make([]string, v.NumField())
		for i := range parts {
			parts[i] = strconv.Quote(v.Type().Field(i).Tag.Get("json")) + ": " + renderValue(v.Field(i))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	panic(v.Kind())
}

// corruptions returns text with one inner item corrupted, each way: a
// scalar (number or bool) replaced by a bare word, one bracket dropped,
// an item of the wrong shape added at the head of a list (a scalar where
// the items are containers, a list where they are scalars).
func corruptions(text string) []string {
	var out []string
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c == '"':
			j := i + 1
			for text[j] != '"' {
				j++
			}
			i = j
		case c == '[' || c == ']' || c == '{' || c == '}':
			out = append(out, text[:i]+text[i+1:])
			if c == '[' && i+1 < len(text) && text[i+1] != ']' {
				extra := "7, "
				if n := text[i+1]; n != '[' && n != '{' {
					extra = "[7], "
				}
				out = append(out, text[:i+1]+extra+text[i+1:])
			}
		case c == '-' || c >= '0' && c <= '9' || c == 't' || c == 'f':
			j := i + 1
			for j < len(text) && strings.IndexByte("-.0123456789truefals", text[j]) >= 0 {
				j++
			}
			out = append(out, text[:i]+"oops"+text[j:])
			i = j - 1
		}
	}
	return out
}
