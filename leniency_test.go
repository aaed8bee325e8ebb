package adapter_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/signature"
)

// Person is a nested output type for the leniency review.
type Person struct {
	Name string `json:"name"`
	Age  int    `json:"age"`
}

// errHonest marks a case whose only requirement is an honest *ParseError
// (no sentinel is more specific than "this text does not hold the value").
var errHonest = errors.New("any *ParseError")

// leniencyCase is one malformation of reference/dspy-pain.md §3, for one
// adapter: the values a careful reader extracts, or the error an honest
// parser returns.
type leniencyCase struct {
	family  string // A … M, as in dspy-pain.md §3
	adapter string // chat, json, xml
	name    string
	sig     string
	reply   string
	want    adapter.Values
	err     error // a sentinel for errors.Is, or errHonest
}

var leniencyAdapters = map[string]adapter.Parser{
	"chat": adapter.Chat{},
	"json": adapter.JSON{},
	"xml":  adapter.XML{},
}

func intp(v int) *int { return &v }

// leniencyCases covers every malformation family for every adapter it
// applies to. Each family keeps its recoverable habits first, then the
// ones an honest parser refuses.
var leniencyCases = []leniencyCase{
	// A. Marker / tag layout drift.
	{"A", "chat", "mid-line marker", "q -> reasoning, answer", "[[ ## reasoning ## ]]\nIt is the capital.[[ ## answer ## ]]\nParis[[ ## completed ## ]]", adapter.Values{"reasoning": "It is the capital.", "answer": "Paris"}, nil},
	{"A", "chat", "bold markers", "q -> reasoning, answer", "**[[ ## reasoning ## ]]**\nIt is the capital.\n\n**[[ ## answer ## ]]**\nParis\n\n**[[ ## completed ## ]]**", adapter.Values{"reasoning": "It is the capital.", "answer": "Paris"}, nil},
	{"A", "chat", "heading markers", "q -> reasoning, answer", "### [[ ## reasoning ## ]]\nIt is the capital.\n\n### [[ ## answer ## ]]\nParis\n\n### [[ ## completed ## ]]", adapter.Values{"reasoning": "It is the capital.", "answer": "Paris"}, nil},
	{"A", "chat", "colon after marker", "q -> answer", "[[ ## answer ## ]]: Paris\n\n[[ ## completed ## ]]", adapter.Values{"answer": "Paris"}, nil},
	{"A", "chat", "tight spacing", "q -> answer", "[[## answer ##]]\nParis\n\n[[## completed ##]]", adapter.Values{"answer": "Paris"}, nil},
	{"A", "chat", "single brackets", "q -> answer", "[ ## answer ## ]\nParis\n\n[ ## completed ## ]", adapter.Values{"answer": "Paris"}, nil},
	{"A", "chat", "capitalised name", "q -> answer", "[[ ## Answer ## ]]\nParis\n\n[[ ## Completed ## ]]", adapter.Values{"answer": "Paris"}, nil},
	{"A", "chat", "no brackets", "q -> answer", "## answer ##\nParis\n\n## completed ##", adapter.Values{"answer": "Paris"}, nil},
	{"A", "chat", "triple brackets", "q -> answer", "[[[ ## answer ### ]]]\nParis\n\n[[[ ## completed ### ]]]", adapter.Values{"answer": "Paris"}, nil},
	{"A", "chat", "field labels", "q -> reasoning, answer", "Reasoning: It is the capital.\nAnswer: Paris", adapter.Values{"reasoning": "It is the capital.", "answer": "Paris"}, nil},
	{"A", "chat", "bold field labels", "q -> reasoning, answer", "**Reasoning:** It is the capital.\n\n**Answer:** Paris", adapter.Values{"reasoning": "It is the capital.", "answer": "Paris"}, nil},
	{"A", "chat", "misspelt completed", "q -> answer", "[[ ## answer ## ]]\nParis\n\n[[ ## completion ## ]]", adapter.Values{"answer": "Paris"}, nil},
	{"A", "chat", "whole reply fenced", "q -> reasoning, answer", "```\n[[ ## reasoning ## ]]\nIt is the capital.\n\n[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]\n```", adapter.Values{"reasoning": "It is the capital.", "answer": "Paris"}, nil},
	{"A", "chat", "harmony tokens", "q -> answer", "<|channel|>analysis<|message|>Easy.<|end|><|start|>assistant<|channel|>final<|message|>[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]<|return|>", adapter.Values{"answer": "Paris"}, nil},
	{"A", "chat", "crlf", "q -> reasoning, answer", "[[ ## reasoning ## ]]\r\nIt is the capital.\r\n\r\n[[ ## answer ## ]]\r\nParis\r\n", adapter.Values{"reasoning": "It is the capital.", "answer": "Paris"}, nil},
	{"A", "xml", "tag case", "q -> reasoning, answer", "<Reasoning>It is the capital.</Reasoning>\n<ANSWER>Paris</ANSWER>", adapter.Values{"reasoning": "It is the capital.", "answer": "Paris"}, nil},
	{"A", "xml", "missing close before next tag", "q -> reasoning, answer", "<reasoning>\nIt is the capital.\n<answer>\nParis\n</answer>", adapter.Values{"reasoning": "It is the capital.", "answer": "Paris"}, nil},
	{"A", "xml", "wrapper element", "q -> reasoning, answer", "<output>\n<reasoning>It is the capital.</reasoning>\n<answer>Paris</answer>\n</output>", adapter.Values{"reasoning": "It is the capital.", "answer": "Paris"}, nil},
	{"A", "xml", "fenced", "q -> answer", "```xml\n<answer>Paris</answer>\n```", adapter.Values{"answer": "Paris"}, nil},
	{"A", "xml", "attributes on the tag", "q -> answer", "<answer type=\"str\">Paris</answer>", adapter.Values{"answer": "Paris"}, nil},
	{"A", "json", "fenced with heading", "q -> answer", "## Output\n```json\n{\"answer\": \"Paris\"}\n```", adapter.Values{"answer": "Paris"}, nil},

	// B. Wrong protocol.
	{"B", "chat", "JSON instead of markers", "q -> reasoning, answer", `{"reasoning": "It is the capital.", "answer": "Paris"}`, adapter.Values{"reasoning": "It is the capital.", "answer": "Paris"}, nil},
	{"B", "chat", "fenced JSON instead of markers", "q -> sentiment: Literal['positive', 'negative'], confidence: float", "```json\n{\"sentiment\": \"negative\", \"confidence\": 0.82}\n```", adapter.Values{"sentiment": "negative", "confidence": 0.82}, nil},
	{"B", "json", "Chat markers instead of JSON", "q -> reasoning, answer: int", "[[ ## reasoning ## ]]\n6 times 7.\n\n[[ ## answer ## ]]\n42\n\n[[ ## completed ## ]]", adapter.Values{"reasoning": "6 times 7.", "answer": 42}, nil},
	{"B", "json", "XML instead of JSON", "q -> reasoning, answer: int", "<reasoning>6 times 7.</reasoning>\n<answer>42</answer>", adapter.Values{"reasoning": "6 times 7.", "answer": 42}, nil},
	{"B", "xml", "JSON instead of XML", "q -> reasoning, answer: int", `{"reasoning": "6 times 7.", "answer": 42}`, adapter.Values{"reasoning": "6 times 7.", "answer": 42}, nil},
	{"B", "xml", "Chat markers instead of XML", "q -> reasoning, answer: int", "[[ ## reasoning ## ]]\n6 times 7.\n\n[[ ## answer ## ]]\n42", adapter.Values{"reasoning": "6 times 7.", "answer": 42}, nil},
	{"B", "chat", "XML instead of markers", "q -> reasoning, answer: int", "<reasoning>6 times 7.</reasoning>\n<answer>42</answer>", adapter.Values{"reasoning": "6 times 7.", "answer": 42}, nil},
	{"B", "chat", "prose only, two fields", "q -> reasoning, answer", "Paris is the capital of France, so the answer is Paris.", nil, adapter.ErrMissingField},
	{"B", "json", "prose only", "q -> reply, intent: Literal['order', 'question']", "Hola, aquí estoy 😊", nil, errHonest},
	{"B", "xml", "prose only", "q -> answer: int", "The answer is forty-two.", nil, adapter.ErrMissingField},

	// C. Reasoning-model artefacts.
	{"C", "chat", "think before markers", "q -> answer", "<think>\nThe capital of France is Paris.\n</think>\n\n[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]", adapter.Values{"answer": "Paris"}, nil},
	{"C", "chat", "orphan close think", "q -> answer", "The capital of France is Paris.\n</think>\n\n[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]", adapter.Values{"answer": "Paris"}, nil},
	{"C", "chat", "markers drafted inside think", "q -> answer", "<think>\nDraft:\n[[ ## answer ## ]]\nLyon?\nNo, Paris.\n</think>\n\n[[ ## answer ## ]]\nParis\n", adapter.Values{"answer": "Paris"}, nil},
	{"C", "json", "think with braces", "q -> title, description", "<think>\nMaybe {\"draft\": true}\n</think>\n{\"title\": \"Photosynthesis\", \"description\": \"Light to sugar.\"}", adapter.Values{"title": "Photosynthesis", "description": "Light to sugar."}, nil},
	{"C", "json", "json tag after think", "q -> answer", "<think>ok</think>\njson{\"answer\": \"Paris\"}", adapter.Values{"answer": "Paris"}, nil},
	{"C", "json", "tool_call tags", "q -> city, unit: Literal['celsius', 'fahrenheit']", "<think>Oslo in Celsius.</think> <tool_call> {\"city\": \"Oslo\", \"unit\": \"celsius\"} </tool_call>", adapter.Values{"city": "Oslo", "unit": "celsius"}, nil},
	{"C", "xml", "think containing tags", "q -> answer", "<think>Is <answer>Lyon</answer> right? No.</think>\n<answer>Paris</answer>", adapter.Values{"answer": "Paris"}, nil},
	{"C", "json", "orphan close think", "q -> answer", "The capital is Paris.\n</think>\n{\"answer\": \"Paris\"}", adapter.Values{"answer": "Paris"}, nil},
	{"C", "xml", "orphan close think", "q -> answer", "The capital is Paris.\n</think>\n<answer>Paris</answer>", adapter.Values{"answer": "Paris"}, nil},
	// A draft answer before an orphan </think> stays ambiguous: a field
	// stream has already sent it when the closing tag arrives.
	{"C", "json", "draft before orphan close think", "q -> answer", "Maybe {\"answer\": \"Lyon\"}.\n</think>\n{\"answer\": \"Paris\"}", nil, adapter.ErrAmbiguous},
	{"C", "xml", "draft before orphan close think", "q -> answer", "Is it <answer>Lyon</answer>? No.\n</think>\n<answer>Paris</answer>", nil, adapter.ErrAmbiguous},
	{"C", "json", "harmony channel tokens", "q -> answer", "<|channel|>analysis<|message|>Easy.<|end|><|start|>assistant<|channel|>final<|message|>{\"answer\": \"Paris\"}", adapter.Values{"answer": "Paris"}, nil},
	{"C", "chat", "truncated inside think", "q -> answer", "<think>\nLet me work out [[ ## answer ## ]] carefully, first", nil, adapter.ErrMissingField},
	{"C", "json", "truncated inside think", "q -> answer", "<think>\nThe JSON will be {\"answer\": \"Par", nil, errHonest},

	// D. Truncation / empty output.
	{"D", "chat", "empty", "q -> answer", "", nil, adapter.ErrMissingField},
	{"D", "json", "empty", "q -> answer", "", nil, errHonest},
	{"D", "xml", "empty", "q -> answer", "", nil, adapter.ErrMissingField},
	{"D", "json", "cut mid-string", "q -> answer", `{"answer": "The three largest cities are Sydney, Mel`, nil, adapter.ErrTruncated},
	{"D", "json", "cut mid-array", "q -> items: list[str]", `{"items": ["a", "b", "c"`, nil, adapter.ErrTruncated},
	{"D", "json", "cut after a number", "q -> people: list[Person]", `{"people": [{"name": "Ada", "age": 36}, {"name": "Bob", "age": 7`, nil, adapter.ErrTruncated},
	{"D", "json", "cut after a key", "q -> answer, year: int", `{"answer": "Paris", "year":`, nil, errHonest},
	{"D", "json", "cut inside a number", "q -> n: float", `{"n": 1.5e`, nil, adapter.ErrTruncated},
	{"D", "json", "cut after a comma", "q -> answer, n: Optional[int]", `{"answer": "Paris", `, nil, adapter.ErrTruncated},
	{"D", "json", "a sign for a number", "q -> n: int", `{"n": -}`, nil, errHonest},
	{"D", "xml", "cut inside a list", "q -> items: list[str]", "<items><item>a</item><item>b", nil, adapter.ErrTruncated},
	{"D", "xml", "cut inside last tag", "q -> reasoning, answer", "<reasoning>Compare.</reasoning>\n<answer>Contract B is cheaper because", nil, adapter.ErrTruncated},
	{"D", "chat", "cut before the last field", "q -> reasoning, answer", "[[ ## reasoning ## ]]\nWe compare the", nil, adapter.ErrMissingField},
	{"D", "json", "missing final brace after complete fields", "q -> reasoning, answer", "{\n  \"reasoning\": \"Both agree.\",\n  \"answer\": \"1937\"\n", adapter.Values{"reasoning": "Both agree.", "answer": "1937"}, nil},

	// E. Extra text, echo, repetition, several candidates.
	{"E", "chat", "preamble", "q -> answer", "Sure! Here is the answer.\n\n[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]", adapter.Values{"answer": "Paris"}, nil},
	{"E", "chat", "closing chatter", "q -> answer", "[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]\n\nLet me know if you need anything else!", adapter.Values{"answer": "Paris"}, nil},
	{"E", "chat", "echoed input", "question -> answer", "[[ ## question ## ]]\nWho wrote it?\n\n[[ ## answer ## ]]\nJane Austen\n\n[[ ## completed ## ]]", adapter.Values{"answer": "Jane Austen"}, nil},
	{"E", "chat", "hallucinated next turn", "question -> answer", "[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]\n\n[[ ## question ## ]]\nAnd Italy?\n\n[[ ## answer ## ]]\nRome", adapter.Values{"answer": "Paris"}, nil},
	{"E", "chat", "identical repeat", "q -> answer: int", "[[ ## answer ## ]]\n42\n\n[[ ## answer ## ]]\n42\n\n[[ ## completed ## ]]", adapter.Values{"answer": 42}, nil},
	{"E", "chat", "conflicting repeat", "q -> answer: int", "[[ ## answer ## ]]\n42\n\nWait.\n\n[[ ## answer ## ]]\n44\n\n[[ ## completed ## ]]", nil, adapter.ErrAmbiguous},
	{"E", "json", "prose around the object", "q -> answer", "Sure, here it is: {\"answer\": \"Paris\"} Hope it helps!", adapter.Values{"answer": "Paris"}, nil},
	{"E", "json", "same object twice", "q -> answer", "{\"answer\": \"Paris\"}\n\nAgain: {\"answer\": \"Paris\"}", adapter.Values{"answer": "Paris"}, nil},
	{"E", "json", "draft with other keys, then the answer", "q -> answer", "Plan: {\"step\": 1, \"goal\": \"find the capital\"}\nAnswer: {\"answer\": \"Paris\"}", adapter.Values{"answer": "Paris"}, nil},
	{"E", "json", "partial draft, then complete", "q -> answer, n: int", "Draft: {\"answer\": \"Paris\"}\nFinal: {\"answer\": \"Paris\", \"n\": 1}", adapter.Values{"answer": "Paris", "n": 1}, nil},
	// An explicit correction says which object is the answer.
	{"E", "json", "draft then correction", "q -> answer", "{\"answer\": \"Lyon\"}\nCorrection: {\"answer\": \"Paris\"}", adapter.Values{"answer": "Paris"}, nil},
	{"E", "json", "two different objects", "q -> key", `prefix {"key": "value1"} text {"key": "value2"} suffix`, nil, adapter.ErrAmbiguous},
	{"E", "xml", "echoed input", "question -> answer", "<question>Who wrote it?</question>\n<answer>Jane Austen</answer>", adapter.Values{"answer": "Jane Austen"}, nil},
	{"E", "xml", "conflicting repeat", "q -> answer: int", "<answer>42</answer>\n<answer>44</answer>", nil, adapter.ErrAmbiguous},
	{"E", "xml", "prose around", "q -> answer", "Here is my answer:\n<answer>Paris</answer>\nThanks!", adapter.Values{"answer": "Paris"}, nil},

	// F. bool coercion.
	{"F", "chat", "True", "q -> ok: bool", "[[ ## ok ## ]]\nTrue", adapter.Values{"ok": true}, nil},
	{"F", "chat", "yes", "q -> ok: bool", "[[ ## ok ## ]]\nyes", adapter.Values{"ok": true}, nil},
	{"F", "chat", "bold", "q -> ok: bool", "[[ ## ok ## ]]\n**False**", adapter.Values{"ok": false}, nil},
	{"F", "chat", "label and bold", "q -> ok: bool", "[[ ## ok ## ]]\nAnswer: **True**", adapter.Values{"ok": true}, nil},
	{"F", "chat", "word then explanation", "q -> ok: bool", "[[ ## ok ## ]]\nFalse. The statement mixes up the dates.", adapter.Values{"ok": false}, nil},
	{"F", "chat", "No, because", "q -> ok: bool", "[[ ## ok ## ]]\nNo, because it is not.", adapter.Values{"ok": false}, nil},
	{"F", "chat", "ambiguous", "q -> ok: bool", "[[ ## ok ## ]]\nThe answer is true or false", nil, errHonest},
	{"F", "json", "string bool", "q -> ok: bool", `{"ok": "true"}`, adapter.Values{"ok": true}, nil},
	{"F", "json", "Python True", "q -> ok: bool", `{"ok": True}`, adapter.Values{"ok": true}, nil},
	{"F", "xml", "yes", "q -> ok: bool", "<ok>Yes</ok>", adapter.Values{"ok": true}, nil},
	{"F", "xml", "yes and no", "q -> ok: bool", "<ok>yes and no</ok>", nil, errHonest},
	{"F", "json", "ambiguous", "q -> ok: bool", `{"ok": "true or false"}`, nil, errHonest},

	// G. number coercion.
	{"G", "chat", "unit", "q -> km: int", "[[ ## km ## ]]\n42 km", adapter.Values{"km": 42}, nil},
	{"G", "chat", "thousands separators", "q -> n: int", "[[ ## n ## ]]\n2,161,000", adapter.Values{"n": 2161000}, nil},
	{"G", "chat", "currency", "q -> price: float", "[[ ## price ## ]]\n$1,234.56", adapter.Values{"price": 1234.56}, nil},
	{"G", "chat", "bold", "q -> year: int", "[[ ## year ## ]]\n**1889**", adapter.Values{"year": 1889}, nil},
	{"G", "chat", "sentence period", "q -> year: int", "[[ ## year ## ]]\n1969.", adapter.Values{"year": 1969}, nil},
	{"G", "chat", "float for float", "q -> x: float", "[[ ## x ## ]]\n4.5", adapter.Values{"x": 4.5}, nil},
	{"G", "chat", "integral float for int", "q -> n: int", "[[ ## n ## ]]\n42.0", adapter.Values{"n": 42}, nil},
	{"G", "chat", "number word", "q -> n: int", "[[ ## n ## ]]\nEight", adapter.Values{"n": 8}, nil},
	{"G", "chat", "fraction for float", "q -> p: float", "[[ ## p ## ]]\n1/36", adapter.Values{"p": 1.0 / 36}, nil},
	{"G", "chat", "hedged", "q -> year: int", "[[ ## year ## ]]\nApproximately 1450 (the earliest records are lost)", adapter.Values{"year": 1450}, nil},
	{"G", "chat", "label", "q -> n: int", "[[ ## n ## ]]\nAnswer: 42", adapter.Values{"n": 42}, nil},
	{"G", "chat", "percentage", "q -> confidence: float", "[[ ## confidence ## ]]\n85%", nil, errHonest},
	{"G", "chat", "word for a number", "q -> n: float", "[[ ## n ## ]]\nHigh", nil, errHonest},
	{"G", "chat", "fraction for int", "q -> n: int", "[[ ## n ## ]]\n4.5", nil, errHonest},
	{"G", "chat", "scale word", "q -> n: int", "[[ ## n ## ]]\n42 million", nil, errHonest},
	{"G", "json", "number as string with unit", "q -> age: int", `{"age": "36 years"}`, adapter.Values{"age": 36}, nil},
	{"G", "json", "hedged string", "q -> n: int", `{"n": "about 2,000"}`, adapter.Values{"n": 2000}, nil},
	{"G", "json", "fraction for int", "q -> n: int", `{"n": 4.5}`, nil, errHonest},
	{"G", "xml", "separators", "q -> n: int", "<n>2,161,000</n>", adapter.Values{"n": 2161000}, nil},
	{"G", "xml", "percentage", "q -> x: float", "<x>85%</x>", nil, errHonest},

	// H. Enum / Literal.
	{"H", "chat", "case", "q -> p: Literal['low', 'medium', 'high']", "[[ ## p ## ]]\nHigh", adapter.Values{"p": "high"}, nil},
	{"H", "chat", "bold", "q -> p: Literal['low', 'medium', 'high']", "[[ ## p ## ]]\n**High**", adapter.Values{"p": "high"}, nil},
	{"H", "chat", "Literal wrapper", "q -> c: Literal['billing', 'technical']", "[[ ## c ## ]]\nLiteral['technical']", adapter.Values{"c": "technical"}, nil},
	{"H", "chat", "quoted", "q -> c: Literal['billing', 'technical']", "[[ ## c ## ]]\n'technical'", adapter.Values{"c": "technical"}, nil},
	{"H", "chat", "value then explanation", "q -> c: Literal['billing', 'technical']", "[[ ## c ## ]]\ntechnical - the user cannot log in", adapter.Values{"c": "technical"}, nil},
	{"H", "chat", "numeric Literal", "q -> n: Literal[1, 2, 3]", "[[ ## n ## ]]\n2", adapter.Values{"n": 2}, nil},
	{"H", "chat", "ambiguous", "q -> c: Literal['billing', 'technical']", "[[ ## c ## ]]\nbilling or technical", nil, errHonest},
	{"H", "chat", "not a member", "q -> c: Literal['billing', 'technical']", "[[ ## c ## ]]\nshipping", nil, adapter.ErrNotInSet},
	{"H", "chat", "label", "q -> c: Literal['billing', 'technical']", "[[ ## c ## ]]\nCategory: billing", adapter.Values{"c": "billing"}, nil},
	{"H", "chat", "explanation names another member", "q -> c: Literal['billing', 'technical']", "[[ ## c ## ]]\ntechnical, though billing is possible", nil, adapter.ErrAmbiguous},
	{"H", "json", "case", "q -> c: Literal['billing', 'technical']", `{"c": "Technical"}`, adapter.Values{"c": "technical"}, nil},
	{"H", "json", "not a member", "q -> c: Literal['billing', 'technical']", `{"c": "shipping"}`, nil, adapter.ErrNotInSet},
	{"H", "xml", "case", "q -> c: Literal['billing', 'technical']", "<c>TECHNICAL</c>", adapter.Values{"c": "technical"}, nil},
	{"H", "xml", "not a member", "q -> c: Literal['billing', 'technical']", "<c>shipping</c>", nil, adapter.ErrNotInSet},
	{"H", "xml", "ambiguous", "q -> c: Literal['billing', 'technical']", "<c>billing or technical</c>", nil, errHonest},
	{"H", "json", "ambiguous", "q -> c: Literal['billing', 'technical']", `{"c": "technical, though billing is possible"}`, nil, adapter.ErrAmbiguous},

	// I. Containers, Optional, nested.
	{"I", "chat", "Python list", "q -> tags: list[str]", "[[ ## tags ## ]]\n['sql', 'indexing']", adapter.Values{"tags": []string{"sql", "indexing"}}, nil},
	{"I", "chat", "bullets", "q -> tags: list[str]", "[[ ## tags ## ]]\n- sql\n- indexing", adapter.Values{"tags": []string{"sql", "indexing"}}, nil},
	{"I", "chat", "numbered", "q -> tags: list[str]", "[[ ## tags ## ]]\n1. sql\n2. indexing", adapter.Values{"tags": []string{"sql", "indexing"}}, nil},
	{"I", "chat", "scalar for a list", "q -> tags: list[str]", "[[ ## tags ## ]]\nsql", adapter.Values{"tags": []string{"sql"}}, nil},
	{"I", "chat", "list of ints", "q -> ns: list[int]", "[[ ## ns ## ]]\n[1, 2, 3]", adapter.Values{"ns": []int{1, 2, 3}}, nil},
	{"I", "chat", "Python None in dict", "q -> args: dict[str, Any]", "[[ ## args ## ]] {\"title\": \"x\", \"rev\": None}", adapter.Values{"args": map[string]any{"title": "x", "rev": nil}}, nil},
	{"I", "chat", "kwargs", "q -> args: dict[str, Any]", "[[ ## args ## ]]\nquery=\"Marie Curie\", k=3", adapter.Values{"args": map[string]any{"query": "Marie Curie", "k": 3}}, nil},
	{"I", "chat", "underscored number in dict", "q -> d: dict[str, float]", "[[ ## d ## ]]\n{'score': 123_456.789}", adapter.Values{"d": map[string]float64{"score": 123456.789}}, nil},
	{"I", "chat", "None for Optional", "q -> year: Optional[int]", "[[ ## year ## ]]\nNone", adapter.Values{"year": (*int)(nil)}, nil},
	{"I", "chat", "N/A for Optional", "q -> year: Optional[int]", "[[ ## year ## ]]\nN/A", adapter.Values{"year": (*int)(nil)}, nil},
	{"I", "chat", "empty for Optional", "q -> year: Optional[int], answer", "[[ ## year ## ]]\n\n[[ ## answer ## ]]\nx", adapter.Values{"year": (*int)(nil), "answer": "x"}, nil},
	{"I", "chat", "Unknown for Optional", "q -> year: Optional[int]", "[[ ## year ## ]]\nUnknown", adapter.Values{"year": (*int)(nil)}, nil},
	{"I", "chat", "comma line for a list", "q -> tags: list[str]", "[[ ## tags ## ]]\nsql, indexing", nil, errHonest},
	{"I", "chat", "Optional value", "q -> year: Optional[int]", "[[ ## year ## ]]\n1648", adapter.Values{"year": intp(1648)}, nil},
	{"I", "chat", "nested struct", "q -> p: Person", "[[ ## p ## ]]\n{\"name\": \"Ada\", \"age\": 36}", adapter.Values{"p": Person{Name: "Ada", Age: 36}}, nil},
	{"I", "chat", "unit inside nested int", "q -> p: Person", "[[ ## p ## ]]\n{\"name\": \"Ada\", \"age\": \"36 years\"}", adapter.Values{"p": Person{Name: "Ada", Age: 36}}, nil},
	{"I", "chat", "Python list of dicts", "q -> ps: list[Person]", "[[ ## ps ## ]]\n[{'name': 'Ada', 'age': 36}, {'name': 'Bob', 'age': 7}]", adapter.Values{"ps": []Person{{"Ada", 36}, {"Bob", 7}}}, nil},
	{"I", "chat", "empty section for required", "q -> answer, page: int", "[[ ## answer ## ]]\nSigned in 1648.\n\n[[ ## page ## ]]\n\n[[ ## completed ## ]]", nil, errHonest},
	{"I", "chat", "null in required struct field", "q -> p: Person", "[[ ## p ## ]]\n{\"name\": \"Ada\", \"age\": null}", nil, errHonest},
	{"I", "json", "null for Optional", "q -> answer, year: Optional[int]", `{"answer": "x", "year": null}`, adapter.Values{"answer": "x", "year": (*int)(nil)}, nil},
	{"I", "json", "Optional omitted", "q -> answer, year: Optional[int]", `{"answer": "x"}`, adapter.Values{"answer": "x", "year": (*int)(nil)}, nil},
	{"I", "json", "empty string for Optional int", "q -> answer, year: Optional[int]", `{"answer": "x", "year": ""}`, adapter.Values{"answer": "x", "year": (*int)(nil)}, nil},
	{"I", "json", "scalar for a list", "q -> tags: list[str]", `{"tags": "sql"}`, adapter.Values{"tags": []string{"sql"}}, nil},
	{"I", "json", "nested with string number", "q -> p: Person", `{"p": {"name": "Ada", "age": "36"}}`, adapter.Values{"p": Person{Name: "Ada", Age: 36}}, nil},
	{"I", "json", "null for required", "q -> answer", `{"answer": null}`, nil, errHonest},
	{"I", "xml", "items", "q -> tags: list[str]", "<tags><item>sql</item><item>indexing</item></tags>", adapter.Values{"tags": []string{"sql", "indexing"}}, nil},
	{"I", "xml", "JSON list in tag", "q -> tags: list[str]", "<tags>[\"sql\", \"indexing\"]</tags>", adapter.Values{"tags": []string{"sql", "indexing"}}, nil},
	{"I", "xml", "nested struct", "q -> p: Person", "<p><name>Ada</name><age>36</age></p>", adapter.Values{"p": Person{Name: "Ada", Age: 36}}, nil},
	{"I", "xml", "None for Optional", "q -> year: Optional[int]", "<year>None</year>", adapter.Values{"year": (*int)(nil)}, nil},

	// J. JSON syntax repair.
	{"J", "json", "trailing comma", "q -> answer", `{"answer": "Paris",}`, adapter.Values{"answer": "Paris"}, nil},
	{"J", "json", "single quotes", "q -> answer", `{'answer': 'Paris'}`, adapter.Values{"answer": "Paris"}, nil},
	{"J", "json", "comments", "q -> answer, n: int", "{\n  // the capital\n  \"answer\": \"Paris\", /* count */ \"n\": 1\n}", adapter.Values{"answer": "Paris", "n": 1}, nil},
	{"J", "json", "unquoted keys", "q -> answer", `{answer: "Paris"}`, adapter.Values{"answer": "Paris"}, nil},
	{"J", "json", "smart quotes", "q -> answer", "{“answer”: “Paris”}", adapter.Values{"answer": "Paris"}, nil},
	{"J", "json", "unescaped inner quotes", "q -> answer, n: int", `{"answer": "He said "hi" twice", "n": 2}`, adapter.Values{"answer": `He said "hi" twice`, "n": 2}, nil},
	{"J", "json", "raw newlines in string", "q -> answer", "{\"answer\": \"line one\nline two\"}", adapter.Values{"answer": "line one\nline two"}, nil},
	{"J", "json", "Python literals", "q -> ok: bool, year: Optional[int]", `{"ok": True, "year": None}`, adapter.Values{"ok": true, "year": (*int)(nil)}, nil},
	{"J", "json", "double-encoded", "q -> answer, n: int", `"{\"answer\": \"Paris\", \"n\": 1}"`, adapter.Values{"answer": "Paris", "n": 1}, nil},
	{"J", "json", "nested trailing comma and missing brace", "q -> users: list[Person], ok: bool", `{"users":[{"name":"Ada","age":36,}],"ok":true`, adapter.Values{"users": []Person{{"Ada", 36}}, "ok": true}, nil},
	{"J", "chat", "JSON repair inside a field", "q -> d: dict[str, int]", "[[ ## d ## ]]\n{'a': 1, 'b': 2,}", adapter.Values{"d": map[string]int{"a": 1, "b": 2}}, nil},
	{"J", "xml", "JSON repair inside an element", "q -> d: dict[str, int]", "<d>{'a': 1, 'b': 2,}</d>", adapter.Values{"d": map[string]int{"a": 1, "b": 2}}, nil},
	{"J", "json", "key repeated with another value", "q -> answer", `{"answer": "Lyon", "answer": "Paris"}`, nil, adapter.ErrAmbiguous},

	// K. Key / shape mismatch.
	{"K", "json", "wrapper key", "q -> answer, n: int", `{"response": {"answer": "Paris", "n": 1}}`, adapter.Values{"answer": "Paris", "n": 1}, nil},
	{"K", "chat", "JSON under a wrapper key instead of markers", "q -> answer, n: int", `{"response": {"answer": "Paris", "n": 1}}`, adapter.Values{"answer": "Paris", "n": 1}, nil},
	{"K", "json", "tool envelope", "q -> answer, n: int", `{"name": "respond", "arguments": {"answer": "Paris", "n": 1}}`, adapter.Values{"answer": "Paris", "n": 1}, nil},
	{"K", "json", "stringified under a wrapper", "q -> answer, n: int", `{"json": "{\"answer\": \"Paris\", \"n\": 1}"}`, adapter.Values{"answer": "Paris", "n": 1}, nil},
	{"K", "json", "cased keys", "q -> answer, n: int", `{"Answer": "Paris", "N": 1}`, adapter.Values{"answer": "Paris", "n": 1}, nil},
	{"K", "json", "extra keys", "q -> answer", `{"answer": "Paris", "confidence": 0.9, "notes": "easy"}`, adapter.Values{"answer": "Paris"}, nil},
	{"K", "json", "bare array for one list field", "q -> tags: list[str]", `["sql", "indexing"]`, adapter.Values{"tags": []string{"sql", "indexing"}}, nil},
	{"K", "json", "empty object", "q -> answer", `{}`, nil, adapter.ErrMissingField},
	{"K", "json", "unrelated keys", "q -> answer, n: int", `{"foo": "Paris", "bar": 1}`, nil, adapter.ErrMissingField},

	// L. XML escaping / CDATA / nested.
	{"L", "xml", "unescaped &", "q -> answer", "<answer>Tom & Jerry</answer>", adapter.Values{"answer": "Tom & Jerry"}, nil},
	{"L", "xml", "unescaped <", "q -> answer", "<answer>if a < b then</answer>", adapter.Values{"answer": "if a < b then"}, nil},
	{"L", "xml", "entities", "q -> answer", "<answer>a &lt; b &amp;&amp; c</answer>", adapter.Values{"answer": "a < b && c"}, nil},
	{"L", "xml", "CDATA", "q -> code", "<code><![CDATA[if a < b and c & d: pass]]></code>", adapter.Values{"code": "if a < b and c & d: pass"}, nil},
	{"L", "xml", "value contains its closing tag", "q -> code", "<code>\nprint('</code>')\n</code>\n", adapter.Values{"code": "print('</code>')"}, nil},
	{"L", "xml", "nested list of structs", "q -> ps: list[Person]", "<ps><item><name>Ada</name><age>36</age></item><item><name>Bob</name><age>7</age></item></ps>", adapter.Values{"ps": []Person{{"Ada", 36}, {"Bob", 7}}}, nil},

	// M. String fidelity.
	{"M", "chat", "quotes around a title", "q -> title", "[[ ## title ## ]]\n\"The Great Gatsby\"", adapter.Values{"title": "The Great Gatsby"}, nil},
	{"M", "chat", "curly quotes around a title", "q -> title", "[[ ## title ## ]]\n“The Great Gatsby”", adapter.Values{"title": "The Great Gatsby"}, nil},
	{"M", "chat", "quoted words inside kept", "q -> answer", "[[ ## answer ## ]]\n\"Dune\" and \"Emma\"", adapter.Values{"answer": "\"Dune\" and \"Emma\""}, nil},
	{"M", "xml", "quotes around a title", "q -> title", "<title>\"The Great Gatsby\"</title>", adapter.Values{"title": "The Great Gatsby"}, nil},
	{"M", "chat", "inner quotes kept", "q -> answer", "[[ ## answer ## ]]\nHe said \"hi\".", adapter.Values{"answer": "He said \"hi\"."}, nil},
	{"M", "chat", "fence inside a value kept", "q -> code", "[[ ## code ## ]]\n```python\nprint(1)\n```\n\n[[ ## completed ## ]]", adapter.Values{"code": "```python\nprint(1)\n```"}, nil},
	{"M", "json", "inner quotes kept", "q -> answer", `{"answer": "He said \"hi\"."}`, adapter.Values{"answer": `He said "hi".`}, nil},
	{"M", "xml", "inner quotes kept", "q -> answer", `<answer>He said "hi".</answer>`, adapter.Values{"answer": `He said "hi".`}, nil},
}

// TestLeniency is the leniency review of issue 9: every malformation family
// of dspy-pain.md §3, per adapter, recovered without an LM call where a
// careful reader can, an honest *ParseError (keeping the completion) where
// not. A value never comes back from a truncated, ambiguous or guessed text.
func TestLeniency(t *testing.T) {
	seen := map[string]bool{}
	opts := signature.WithTypes(map[string]reflect.Type{"Person": reflect.TypeFor[Person]()})
	for _, c := range leniencyCases {
		seen[c.family+"/"+c.adapter] = true
		t.Run(fmt.Sprintf("%s/%s/%s", c.family, c.adapter, strings.ReplaceAll(c.name, " ", "_")), func(t *testing.T) {
			sig, err := signature.Parse(c.sig, opts)
			require.NoError(t, err)
			got, err := leniencyAdapters[c.adapter].Parse(sig, c.reply)
			if c.err == nil {
				require.NoError(t, err)
				assert.Equal(t, c.want, got)
				return
			}
			var pe *adapter.ParseError
			require.ErrorAs(t, err, &pe, "got %#v", got)
			assert.Equal(t, c.reply, pe.Completion, "the error keeps the raw text")
			if c.err != errHonest {
				assert.ErrorIs(t, err, c.err)
			}
		})
	}
	// Every family is reviewed for every adapter it applies to.
	applies := map[string]string{
		"A": "chat json xml", "B": "chat json xml", "C": "chat json xml", "D": "chat json xml",
		"E": "chat json xml", "F": "chat json xml", "G": "chat json xml", "H": "chat json xml",
		"I": "chat json xml", "J": "chat json xml", "K": "chat json", "L": "xml", "M": "chat json xml",
	}
	for fam, as := range applies {
		for _, a := range strings.Fields(as) {
			assert.True(t, seen[fam+"/"+a], "family %s has no %s case", fam, a)
		}
	}
}
