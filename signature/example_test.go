package signature_test

import (
	"fmt"
	"reflect"

	"github.com/sigwire/adapter/signature"
)

func ExampleParse() {
	sig, err := signature.Parse("question, context: list[str] -> reasoning, answer: int")
	if err != nil {
		panic(err)
	}
	fmt.Println(sig.Instructions())
	for _, f := range sig.Outputs() {
		fmt.Printf("%s (%s) %v\n", f.Name, f.Spec, f.Type)
	}
	// Output:
	// Given the fields `question`, `context`, produce the fields `reasoning`, `answer`.
	// reasoning (str) string
	// answer (int) int
}

func ExampleParse_error() {
	_, err := signature.Parse("question -> answer: Foo")
	fmt.Println(err)
	// Output:
	// signature: unknown type (register custom types with signature.WithTypes): "Foo" at offset 20 in "question -> answer: Foo"
}

func ExampleWithTypes() {
	type Point struct {
		X float64 `json:"x"`
		Y float64 `json:"y"`
	}
	sig, _ := signature.Parse("description -> points: list[Point]",
		signature.WithTypes(map[string]reflect.Type{"Point": reflect.TypeFor[Point]()}))
	fmt.Println(sig.Output(0).Spec, sig.Output(0).Type)
	// Output: list[Point] []signature_test.Point
}

// Priority is an enum: a named string type that lists its values.
type Priority string

func (Priority) EnumValues() []string { return []string{"low", "medium", "high"} }

func ExampleFromStructs() {
	type Ticket struct {
		Subject string `json:"subject"`
		Body    string `json:"body" desc:"the customer's message"`
	}
	type Triage struct {
		Priority Priority `json:"priority"`
		Team     string   `json:"team" desc:"which team should handle it"`
	}
	sig, err := signature.FromStructs[Ticket, Triage](signature.WithInstructions("Triage the support ticket."))
	if err != nil {
		panic(err)
	}
	fmt.Println(sig)
	fmt.Println(sig.Output(0).Spec.EnumValues())
	// Output:
	// subject, body -> priority: Priority, team
	// [low medium high]
}

func ExampleSignature_Prepend() {
	sig, _ := signature.Parse("question -> answer")
	cot, _ := sig.Prepend(signature.Output, signature.Field{Name: "reasoning", Desc: "${reasoning}"})
	fmt.Println(cot)
	fmt.Println(sig)
	// Output:
	// question -> reasoning, answer
	// question -> answer
}
