package adapter

// The module's dependencies, pinned in go.mod before the code that uses them
// lands (the pipeline, the JSON adapter's strict schema and repair). This file
// goes away as soon as each one has a real importer.
import (
	_ "github.com/invopop/jsonschema"
	_ "github.com/kaptinlin/jsonrepair"
	_ "github.com/sashabaranov/go-openai"
)
