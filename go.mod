module github.com/sigwire/adapter

go 1.26.4

require (
	github.com/invopop/jsonschema v0.14.0
	github.com/kaptinlin/jsonrepair v0.4.8
	github.com/sashabaranov/go-openai v1.43.0
	github.com/stretchr/testify v1.12.1
)

require (
	github.com/bahlo/generic-list-go v0.2.0 // indirect
	github.com/buger/jsonparser v1.1.2 // indirect
	github.com/go-json-experiment/json v0.0.0-20260601182631-00ed12fed2a6 // indirect
	github.com/pb33f/ordered-map/v2 v2.3.1 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	go.yaml.in/yaml/v4 v4.0.0-rc.2 // indirect
)
