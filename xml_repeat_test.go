package adapter_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/signature"
)

type repeatPerson struct {
	Name string   `json:"name"`
	Age  int      `json:"age"`
	Tags []string `json:"tags"`
}

// xmlSpell writes v (a Go value of a list, dict or struct type, or a
// scalar) as the element tag, in one of the ways a model writes it: the
// XML adapter's form (<item> children, members as elements), with blanks
// and line breaks between elements, or a JSON text inside the element
// for a list.
func xmlSpell(r *rand.Rand, tag string, v reflect.Value) string {
	nl := func() string { return []string{"", "", "\n", "\n  ", " "}[r.IntN(5)] }
	switch v.Kind() {
	case reflect.Slice:
		if v.Len() > 0 && v.Type().Elem().Kind() != reflect.Struct && r.IntN(4) == 0 {
			b, _ := json.Marshal(v.Interface())
			return "<" + tag + ">" + nl() + string(b) + nl() + "</" + tag + ">"
		}
		var b strings.Builder
		b.WriteString("<" + tag + ">")
		for i := range v.Len() {
			b.WriteString(nl() + xmlSpell(r, "item", v.Index(i)))
		}
		b.WriteString(nl() + "</" + tag + ">")
		return b.String()
	case reflect.Map:
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
		r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		var b strings.Builder
		b.WriteString("<" + tag + ">")
		for _, k := range keys {
			b.WriteString(nl() + xmlSpell(r, k.String(), v.MapIndex(k)))
		}
		b.WriteString(nl() + "</" + tag + ">")
		return b.String()
	case reflect.Struct:
		var b strings.Builder
		b.WriteString("<" + tag + ">")
		for _, i := range r.Perm(v.NumField()) {
			name := strings.Split(v.Type().Field(i).Tag.Get("json"), ",")[0]
			b.WriteString(nl() + xmlSpell(r, name, v.Field(i)))
		}
		b.WriteString(nl() + "</" + tag + ">")
		return b.String()
	}
	return "<" + tag + ">" + []string{"", " "}[r.IntN(2)] + fmt.Sprint(v.Interface()) + "</" + tag + ">"
}

// TestXMLRepeatedValues: an XML reply that gives a list, dict or struct
// field twice reads it when the two give the same value, however written
// (blanks, member order, <item> elements or a JSON list), and is
// ErrAmbiguous when they differ — never the items' markup as values
// (issue 45: <tags><item>a</item><item>b</item></tags> twice read as two
// strings of markup for list[str]; DSPy 3.3.1 reads that too). Elements
// that are items (<tags>a</tags><tags>b</tags>) stay a list's items.
func TestXMLRepeatedValues(t *testing.T) {
	sig, err := signature.Parse("q -> tags: list[str], counts: dict[str, int], groups: dict[str, list[str]], who: Person, people: list[Person], nums: list[int]",
		signature.WithTypes(map[string]reflect.Type{"Person": reflect.TypeFor[repeatPerson]()}))
	require.NoError(t, err)
	words := []string{"a", "b", "Paris", "x y", "ok"}
	r := rand.New(rand.NewPCG(45, 6))
	strs := func() []string {
		out := []string{}
		for range 1 + r.IntN(3) {
			out = append(out, words[r.IntN(len(words))])
		}
		return out
	}
	person := func() repeatPerson {
		return repeatPerson{Name: words[r.IntN(len(words))], Age: r.IntN(90), Tags: strs()}
	}
	gen := func() adapter.Values {
		counts, groups := map[string]int{}, map[string][]string{}
		for range 1 + r.IntN(3) {
			counts[words[r.IntN(2)]] = r.IntN(9)
			groups[[]string{"k", "m"}[r.IntN(2)]] = strs()
		}
		return adapter.Values{"tags": strs(), "counts": counts, "groups": groups, "who": person(),
			"people": []repeatPerson{person(), person()}[:1+r.IntN(2)], "nums": []int{r.IntN(5), r.IntN(5) + 5}}
	}
	names := []string{"tags", "counts", "groups", "who", "people", "nums"}
	write := func(vals adapter.Values, twice string, second any) string {
		var b strings.Builder
		for _, n := range names {
			b.WriteString(xmlSpell(r, n, reflect.ValueOf(vals[n])) + "\n")
			if n == twice {
				b.WriteString("\n" + xmlSpell(r, n, reflect.ValueOf(second)) + "\n")
			}
		}
		return b.String()
	}
	for range 1500 {
		vals := gen()
		n := names[r.IntN(len(names))]
		reply := write(vals, n, vals[n])
		got, err := adapter.XML{}.Parse(sig, reply)
		require.NoError(t, err, reply)
		require.Equal(t, vals, got, reply)

		other := gen()[n]
		if reflect.DeepEqual(other, vals[n]) {
			continue
		}
		reply = write(vals, n, other)
		_, err = adapter.XML{}.Parse(sig, reply)
		require.ErrorIs(t, err, adapter.ErrAmbiguous, reply)
	}

	// Elements that are items stay items.
	got, err := adapter.XML{}.Parse(mustParse(t, "q -> tags: list[str]"), "<tags>a</tags>\n<tags>b</tags>")
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, got["tags"])
}

// TestXMLRepeatedChildrenOfDictOfLists: repeated child elements of a
// dict[str, list[T]] field that are items collect into the list (they
// were [4] for <a>3</a><a>4</a>: the last one silently won); repeated
// children that each hold a whole list (<item> elements) repeat one
// value: the same list reads, two different ones are ambiguous (as for a
// field: see TestXMLRepeatedLists).
func TestXMLRepeatedChildrenOfDictOfLists(t *testing.T) {
	sig := mustParse(t, "q -> groups: dict[str, list[int]]")
	got, err := adapter.XML{}.Parse(sig, "<groups><a>3</a><a>4</a><b>5</b></groups>")
	require.NoError(t, err)
	assert.Equal(t, map[string][]int{"a": {3, 4}, "b": {5}}, got["groups"])

	got, err = adapter.XML{}.Parse(sig, "<groups><a><item>3</item><item>4</item></a><a>\n<item>3</item>\n<item> 4 </item>\n</a></groups>")
	require.NoError(t, err)
	assert.Equal(t, map[string][]int{"a": {3, 4}}, got["groups"])

	_, err = adapter.XML{}.Parse(sig, "<groups><a><item>3</item></a><a><item>4</item></a></groups>")
	assert.ErrorIs(t, err, adapter.ErrAmbiguous)

	// A repeated child of a scalar member with two values is ambiguous.
	_, err = adapter.XML{}.Parse(mustParse(t, "q -> d: dict[str, int]"), "<d><a>3</a><a>4</a></d>")
	assert.ErrorIs(t, err, adapter.ErrAmbiguous)
}
