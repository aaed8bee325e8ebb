// Command quickstart shows the library's first step: a task declared once
// as a signature, in DSPy's string syntax or as Go structs.
package main

import (
	"fmt"
	"log"

	"github.com/sigwire/adapter/signature"
)

// Priority is an enum: a named string type that lists its allowed values.
type Priority string

// EnumValues lists the values the model may answer with.
func (Priority) EnumValues() []string { return []string{"low", "medium", "high"} }

// Ticket is the input of the triage task.
type Ticket struct {
	Subject string `json:"subject"`
	Body    string `json:"body" desc:"the customer's message"`
}

// Triage is the output of the triage task.
type Triage struct {
	Priority Priority `json:"priority"`
	Team     string   `json:"team" desc:"which team should handle it"`
}

func main() {
	// DSPy's syntax, ported verbatim.
	qa, err := signature.Parse("question, context: list[str] -> reasoning, answer: int")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(qa)
	fmt.Println(qa.Instructions())
	for _, f := range qa.Outputs() {
		fmt.Printf("  output %-9s shown to the model as (%s), decoded into Go %v\n", f.Name, f.Spec, f.Type)
	}

	// The same kind of task from Go structs.
	triage, err := signature.FromStructs[Ticket, Triage](signature.WithInstructions("Triage the support ticket."))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(triage)
	fmt.Println("  priority is one of", triage.Output(0).Spec.EnumValues())

	// Errors say what is wrong and where.
	_, err = signature.Parse("question -> answer: list[str")
	fmt.Println(err)
}
