package adapter_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/signature"
)

type bamlAddress struct {
	Street  string `json:"street"`
	City    string `json:"city"`
	Country string `json:"country" literal:"'US', 'CA'"`
}

type bamlVisit struct {
	Date  string  `json:"date"`
	Score float64 `json:"score"`
}

type bamlPatient struct {
	Name     string            `json:"name" desc:"Full name of the patient"`
	Age      int               `json:"age"`
	Address  *bamlAddress      `json:"address"`
	Visits   []bamlVisit       `json:"visits" desc:"List of visits"`
	Tags     []string          `json:"tags"`
	Metadata map[string]string `json:"metadata"`
	Active   bool              `json:"active"`
}

type bamlNode struct {
	Children []bamlNode `json:"children"`
}

// TestBAMLComplexSchema reproduces DSPy's baml_format_complex_schema
// rendering, quirks included (the nested "{" keeps its indentation).
func TestBAMLComplexSchema(t *testing.T) {
	sig, err := signature.New("Extract the patient.", []signature.Field{{Name: "note"}},
		[]signature.Field{{Name: "patient", Type: typeOf[bamlPatient]()}})
	require.NoError(t, err)
	msgs, err := adapter.BAML{}.Format(sig, nil, adapter.Values{"note": "n"})
	require.NoError(t, err)
	want := "Output field `patient` should be of type: {\n" +
		"  # Full name of the patient\n" +
		"  name: string,\n" +
		"  age: int,\n" +
		"  address:   {\n" +
		"    street: string,\n" +
		"    city: string,\n" +
		"    country: \"US\" or \"CA\",\n" +
		"  } or null,\n" +
		"  # List of visits\n" +
		"  visits: [\n" +
		"    {\n" +
		"      date: string,\n" +
		"      score: float,\n" +
		"    }\n" +
		"  ],\n" +
		"  tags: string[],\n" +
		"  metadata: dict[string, string],\n" +
		"  active: boolean,\n" +
		"}\n\n[[ ## completed ## ]]"
	assert.Contains(t, msgs[0].Content, want)

	reply := `{"patient": {"name": "Ann", "age": 41, "address": null, "visits": [{"date": "2026-01-02", "score": 0.5}], "tags": [], "metadata": {"k": "v"}, "active": true}}`
	got, err := adapter.BAML{}.Parse(sig, reply)
	require.NoError(t, err)
	assert.Equal(t, bamlPatient{Name: "Ann", Age: 41, Visits: []bamlVisit{{"2026-01-02", 0.5}}, Tags: []string{}, Metadata: map[string]string{"k": "v"}, Active: true}, got["patient"])
}

func TestBAMLRecursiveRefused(t *testing.T) {
	sig, err := signature.New("", []signature.Field{{Name: "q"}}, []signature.Field{{Name: "tree", Type: typeOf[bamlNode]()}})
	require.NoError(t, err)
	_, err = adapter.BAML{}.Format(sig, nil, adapter.Values{"q": "x"})
	assert.ErrorIs(t, err, adapter.ErrRecursiveBAML)
	assert.True(t, strings.Contains(err.Error(), "tree"), err.Error())
}
