package reply

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sigwire/adapter/internal/jsonx"
)

// randJSON is a random JSON value (json.Number for numbers), depth-bounded.
func randJSON(r *rand.Rand, depth int) any {
	k := r.IntN(8)
	if depth <= 0 && k >= 6 {
		k = r.IntN(6)
	}
	switch k {
	case 0:
		return []string{"a", "Paris", "x/y", "", "two words", "Ünïcode"}[r.IntN(6)]
	case 1:
		return json.Number(strconv.Itoa(r.IntN(2000) - 1000))
	case 2:
		f := strconv.FormatFloat(float64(r.IntN(20000)-10000)/8, 'f', -1, 64)
		if !strings.Contains(f, ".") {
			f += ".0"
		}
		return json.Number(f)
	case 3:
		return r.IntN(2) == 0
	case 4:
		return nil
	case 5:
		return json.Number(strconv.FormatFloat(float64(r.IntN(100))+0.25, 'f', -1, 64))
	case 6:
		a := make([]any, r.IntN(4))
		for i := range a {
			a[i] = randJSON(r, depth-1)
		}
		return a
	}
	m := map[string]any{}
	for range r.IntN(4) {
		m[[]string{"k", "name", "id", "tags", "x"}[r.IntN(5)]] = randJSON(r, depth-1)
	}
	return m
}

// spell writes v as a model might: random blanks and line breaks, comments,
// trailing commas, keys in any order, escaped letters in strings, floats
// with trailing zeros or in exponent form. Every spelling is the same
// JSON value.
func spell(r *rand.Rand, v any) string {
	ws := func() string {
		return []string{"", "", " ", "\n  ", "\t", " /* c */ ", " // note\n"}[r.IntN(7)]
	}
	trailing := func() string {
		if r.IntN(4) == 0 {
			return ","
		}
		return ""
	}
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(x)
	case string:
		var b strings.Builder
		b.WriteByte('"')
		for _, c := range x {
			switch {
			case c == '/' && r.IntN(2) == 0:
				b.WriteString(`\/`)
			case c < 0x80 && c != '"' && c != '\\' && r.IntN(3) == 0:
				fmt.Fprintf(&b, `\u%04x`, c)
			default:
				q, _ := json.Marshal(string(c))
				b.Write(q[1 : len(q)-1])
			}
		}
		b.WriteByte('"')
		return b.String()
	case json.Number:
		s := string(x)
		if strings.Contains(s, ".") {
			f, _ := strconv.ParseFloat(s, 64)
			switch r.IntN(3) {
			case 0:
				s += "0"
			case 1:
				s = strconv.FormatFloat(f, 'e', -1, 64)
			}
		}
		return s
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = ws() + spell(r, e) + ws()
		}
		t := ""
		if len(x) > 0 {
			t = trailing()
		}
		return "[" + strings.Join(parts, ",") + t + ws() + "]"
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = ws() + strconv.Quote(k) + ws() + ":" + ws() + spell(r, x[k]) + ws()
		}
		t := ""
		if len(keys) > 0 {
			t = trailing()
		}
		return "{" + strings.Join(parts, ",") + t + ws() + "}"
	}
	panic(fmt.Sprintf("%T", v))
}

// differ returns a value unlike v: one leaf changed (an integer written as
// a float is another value, as Python reads it).
func differ(r *rand.Rand, v any) any {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return !x
	case string:
		return x + "!"
	case json.Number:
		if !strings.Contains(string(x), ".") && r.IntN(2) == 0 {
			return json.Number(string(x) + ".0")
		}
		f, _ := strconv.ParseFloat(string(x), 64)
		return json.Number(strconv.FormatFloat(f+1, 'f', -1, 64))
	case []any:
		if len(x) == 0 {
			return []any{nil}
		}
		y := slices.Clone(x)
		i := r.IntN(len(y))
		y[i] = differ(r, y[i])
		return y
	case map[string]any:
		y := map[string]any{}
		for k, e := range x {
			y[k] = e
		}
		for k, e := range y {
			y[k] = differ(r, e)
			return y
		}
		y["extra"] = json.Number("1")
		return y
	}
	panic(fmt.Sprintf("%T", v))
}

// TestRepeatedKeyComparesValues: a key given twice in a JSON reply with
// the same value, in any two spellings (blanks, comments, trailing commas,
// key order, escapes, float spellings), reads that value; with different
// values it is ErrAmbiguous, never one of the two.
// (Issue 45: the same value written with other spacing, a trailing comma
// or a comment was refused as two values; DSPy reads it.)
func TestRepeatedKeyComparesValues(t *testing.T) {
	sig := mustSig(t, "question -> v: Any, n: int")
	r := rand.New(rand.NewPCG(45, 5))
	for range 3000 {
		v := randJSON(r, 3)
		w := differ(r, v)
		if jsonx.Equal(v, w) {
			t.Fatalf("differ(%v) = %v, the same value", v, w)
		}
		for _, c := range []struct {
			second any
			same   bool
		}{{v, true}, {w, false}} {
			reply := "{" + `"v": ` + spell(r, v) + `, "n": 1, "v":` + spell(r, c.second) + "}"
			if r.IntN(2) == 0 {
				reply = "Here it is:\n```json\n" + reply + "\n```"
			}
			for _, prefer := range []Shape{Markers, JSON, XML} {
				fields := make([]Field, 2)
				err := Read(sig, reply, prefer, fields, nil)
				switch {
				case c.same && err != nil:
					t.Fatalf("%s (shape %d): %v", reply, prefer, err)
				case c.same && !jsonx.Equal(fields[0].Value, v):
					t.Fatalf("%s (shape %d): %#v, want %#v", reply, prefer, fields[0].Value, v)
				case !c.same && !errors.Is(err, errAmbiguous):
					t.Fatalf("%s (shape %d): %#v, %v; want ErrAmbiguous", reply, prefer, fields[0].Value, err)
				}
			}
		}
	}
}

// TestSameValueTwiceInOtherSpellings: the JSON reader's other comparisons
// of values compare them as JSON values too: keys in other cases giving
// one value, and a repeated object.
func TestSameValueTwiceInOtherSpellings(t *testing.T) {
	sig := mustSig(t, "question -> answer: float")
	for _, reply := range []string{
		`{"Answer": 1.5, "ANSWER": 1.50}`,
		"{\"answer\": 1.5}\n\nOnce more: {\"answer\": 15e-1}",
	} {
		fields := make([]Field, 1)
		if err := Read(sig, reply, JSON, fields, nil); err != nil {
			t.Errorf("%s: %v", reply, err)
		}
	}
}
