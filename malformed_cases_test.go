package adapter_test

import (
	"fmt"
	"reflect"
	"testing"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/signature"
)

// TestMalformedRepliesByFamily: malformed replies across the families
// (markers, labels, JSON, XML, renamed fields, numbers), each written
// without reading the parser: a value, or an error where the text does
// not say.
func TestMalformedRepliesByFamily(t *testing.T) {
	opts := signature.WithTypes(map[string]reflect.Type{"Person": reflect.TypeFor[Person]()})
	type c struct {
		a, sig, reply string
		want          adapter.Values // nil: error
	}
	var none *int
	cases := []c{
		// markers
		{"chat", "q -> reasoning, answer", "[[ ## reasoning ## ]]\nr\n\n[[ ## answer ## ]]]\nParis", adapter.Values{"reasoning": "r", "answer": "Paris"}},
		{"chat", "q -> reasoning, answer", "[[ ## Reasoning ## ]]\nr\n\n[[ ##Answer## ]]\nParis\n\n[[ ## completed ## ]", adapter.Values{"reasoning": "r", "answer": "Paris"}},
		{"chat", "q -> reasoning, answer", "**Reasoning**\nr\n\n**Answer**\nParis", adapter.Values{"reasoning": "r", "answer": "Paris"}},
		{"chat", "q -> reasoning, answer", "[[ ## reasoning ## ]]\nr\n[[ ## answer ## ]] Paris", adapter.Values{"reasoning": "r", "answer": "Paris"}},
		{"chat", "q -> answer: int", "[[ ## answer ## ]]\n-5", adapter.Values{"answer": -5}},
		{"xml", "q -> tags: list[str]", "<tags>\nReasoning: both apply.\n```json\n[\"sql\", \"indexing\"]\n```\n</tags>", adapter.Values{"tags": []string{"sql", "indexing"}}},
		{"chat", "q -> answer", "Paris\n\n[[ ## completed ## ]]", adapter.Values{"answer": "Paris"}},
		{"chat", "q -> reasoning, answer", "Reasoning: r\n\nAnswer:\n```\nParis\n```", adapter.Values{"reasoning": "r", "answer": "```\nParis\n```"}},
		{"chat", "q -> ok: bool", "[[ ## ok ## ]]\n**Verdict:** The claim is **true**.", adapter.Values{"ok": true}},
		{"json", "q -> reasoning, answer", "{\"reasoning\": He said \"a\": b, fine,\n\"answer\": \"Paris\"}", adapter.Values{"reasoning": "He said \"a\": b, fine", "answer": "Paris"}},
		{"chat", "q -> reasoning, answer", "1. [[ ## reasoning ## ]]\nr\n2. [[ ## answer ## ]]\nParis", adapter.Values{"reasoning": "r", "answer": "Paris"}},
		{"chat", "q -> reasoning, answer", "1) [[ ## reasoning ## ]]\nStep 1. read\n\n2) [[ ## answer ## ]]\nParis", adapter.Values{"reasoning": "Step 1. read", "answer": "Paris"}},
		{"chat", "q -> answer: int", "[[ ## answer ## ]] -5", adapter.Values{"answer": -5}},
		{"chat", "q -> answer: int", "[[ ## answer ## ]]: -5", adapter.Values{"answer": -5}},
		// renamed
		{"chat", "q -> search_query, k: int", "[[ ## query ## ]]\ncats\n\n[[ ## k ## ]]\n3", adapter.Values{"search_query": "cats", "k": 3}},
		{"json", "q -> search_query, k: int", `{"query": "cats", "k": 3}`, adapter.Values{"search_query": "cats", "k": 3}},
		{"xml", "q -> search_query, k: int", "<query>cats</query><k>3</k>", adapter.Values{"search_query": "cats", "k": 3}},
		{"chat", "q -> search_query, k: int", "[[ ## query ## ]]\ncats\n\n[[ ## q ## ]]\ndogs\n\n[[ ## k ## ]]\n3", adapter.Values{"search_query": "cats", "k": 3}},
		// bare
		{"chat", "q -> summary", "  The report says sales rose.  ", adapter.Values{"summary": "The report says sales rose."}},
		{"json", "q -> summary", "The report: sales rose 5%.", adapter.Values{"summary": "The report: sales rose 5%."}},
		{"chat", "q -> summary: str, n: Optional[int]", "Sales rose.", nil},
		// explained
		{"chat", "q -> year: int", "[[ ## year ## ]]\nThe Peace of Westphalia was concluded in 1648, ending the war.", adapter.Values{"year": 1648}},
		{"chat", "q -> year: int", "[[ ## year ## ]]\nIt ended in 1648 after 30 years.", nil},
		{"chat", "q -> ok: bool", "[[ ## ok ## ]]\nThe statement is not true.", nil},
		{"chat", "q -> ok: bool", "[[ ## ok ## ]]\nBased on the evidence: yes.", adapter.Values{"ok": true}},
		{"chat", "q -> c: Literal['billing', 'technical', 'shipping']", "[[ ## c ## ]]\nThis is clearly a shipping issue.", adapter.Values{"c": "shipping"}},
		{"chat", "q -> c: Literal['billing', 'technical', 'shipping']", "[[ ## c ## ]]\nNot billing, this is shipping.", nil},
		{"chat", "q -> score: float", "[[ ## score ## ]]\nI'd rate it 0.8 out of 1.", nil},
		// hedged
		{"chat", "q -> n: int", "[[ ## n ## ]]\napproximately 2.5 million", nil},
		{"chat", "q -> n: int", "[[ ## n ## ]]\nroughly 40 (give or take 5)", nil},
		{"chat", "q -> n: int", "[[ ## n ## ]]\n~40 people", adapter.Values{"n": 40}},
		{"chat", "q -> n: float", "[[ ## n ## ]]\n≈ 3.14", adapter.Values{"n": 3.14}},
		// unknown
		{"chat", "q -> page: Optional[int]", "[[ ## page ## ]]\nNo page number is given in the excerpt.", adapter.Values{"page": none}},
		{"chat", "q -> page: Optional[int]", "[[ ## page ## ]]\nThe page is not specified, but chapter 3 starts on page 12.", nil},
		{"chat", "q -> page: int", "[[ ## page ## ]]\nUnknown", nil},
		{"json", "q -> page: Optional[int]", `{"page": "unknown (not in the text)"}`, adapter.Values{"page": none}},
		// fenced
		{"chat", "q -> answer", "```text\n[[ ## answer ## ]]\nParis\n```\n", adapter.Values{"answer": "Paris"}},
		{"xml", "q -> answer", "Answer below.\n```xml\n<answer>Paris</answer>\n```", adapter.Values{"answer": "Paris"}},
		// missing bracket
		{"chat", "q -> tags: list[str]", "[[ ## tags ## ]]\n[\"a\", \"b\"\n\n[[ ## completed ## ]]", adapter.Values{"tags": []string{"a", "b"}}},
		{"json", "q -> p: Person, ok: bool", `{"p": {"name": "Ada", "age": 36, "ok": true}`, adapter.Values{"p": Person{"Ada", 36}, "ok": true}},
		// fenced array
		{"json", "q -> items: list[int]", "I'll list them.\n```\n[1, 2, 3]\n```\nDone.", adapter.Values{"items": []int{1, 2, 3}}},
		// unquoted
		{"json", "q -> reasoning, answer", "{\"reasoning\": It's \"obvious\": the capital is Paris,\n\"answer\": \"Paris\"}", adapter.Values{"reasoning": "It's \"obvious\": the capital is Paris", "answer": "Paris"}},
		// correction
		{"json", "q -> answer", "{\"answer\": \"Lyon\"}\nOops — I was wrong. The correct one:\n{\"answer\": \"Paris\"}", adapter.Values{"answer": "Paris"}},
		{"json", "q -> answer", "{\"answer\": \"Lyon\"}\nAlternatively:\n{\"answer\": \"Paris\"}", nil},
	}
	for _, tc := range cases {
		sig, err := signature.Parse(tc.sig, opts)
		if err != nil {
			t.Fatal(err)
		}
		got, err := gParsers[tc.a].Parse(sig, tc.reply)
		switch {
		case tc.want == nil && err == nil:
			t.Errorf("WRONG (should refuse) %s %q: %v", tc.a, tc.reply, got)
		case tc.want != nil && err != nil:
			t.Errorf("MISS %s %q: %v", tc.a, tc.reply, err)
		case tc.want != nil && !reflect.DeepEqual(fmt.Sprint(tc.want), fmt.Sprint(got)):
			t.Errorf("WRONG %s %q: %v want %v", tc.a, tc.reply, got, tc.want)
		}
	}
}
