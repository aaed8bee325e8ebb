package serve

import (
	"fmt"
	"maps"
	"net/http"

	"github.com/sigwire/adapter/signature"
)

// Schemas returns the JSON Schemas of sig's inputs (the body of POST
// /predict) and outputs (a Response's "outputs"): an object with a
// property per field, its type's schema as the adapters show it to the
// model, its description; required: every input without a default that
// is not Optional, and every output.
func Schemas(sig *signature.Signature) (inputs, outputs map[string]any, err error) {
	if inputs, err = objectSchema(sig.Inputs(), true); err != nil {
		return nil, nil, err
	}
	if outputs, err = objectSchema(sig.Outputs(), false); err != nil {
		return nil, nil, err
	}
	return inputs, outputs, nil
}

func objectSchema(fields []signature.Field, inputs bool) (map[string]any, error) {
	props := make(map[string]any, len(fields))
	required := []string{}
	for _, f := range fields {
		s, err := f.Spec.PromptSchema()
		if err != nil {
			return nil, fmt.Errorf("serve: the schema of field %q: %w", f.Name, err)
		}
		s = maps.Clone(s)
		if f.Desc != "" {
			s["description"] = f.Desc
		}
		props[f.Name] = s
		if !inputs || (!f.HasDefault && !f.Spec.Nullable()) {
			required = append(required, f.Name)
		}
	}
	return map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}, nil
}

// schema answers GET /schema.
func (h *Handler) schema(w http.ResponseWriter, _ *http.Request) {
	in, out, err := Schemas(h.Module.Signature())
	if err != nil {
		writeError(w, &Error{Status: http.StatusInternalServerError, Type: "internal", Message: err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"inputs": in, "outputs": out})
}

// openAPI answers GET /openapi.json: an OpenAPI 3.1 document of the
// Handler's routes.
func (h *Handler) openAPI(w http.ResponseWriter, _ *http.Request) {
	doc, err := h.OpenAPI()
	if err != nil {
		writeError(w, &Error{Status: http.StatusInternalServerError, Type: "internal", Message: err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, doc)
}

// OpenAPI returns the OpenAPI 3.1 document of the Handler's routes, with
// its module's input and output schemas.
func (h *Handler) OpenAPI() (map[string]any, error) {
	sig := h.Module.Signature()
	in, out, err := Schemas(sig)
	if err != nil {
		return nil, err
	}
	title := h.Title
	if title == "" {
		title = "sigwire"
	}
	ref := func(name string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + name} }
	jsonBody := func(schema map[string]any) map[string]any {
		return map[string]any{"content": map[string]any{"application/json": map[string]any{"schema": schema}}}
	}
	errResp := func(desc string) map[string]any {
		r := jsonBody(ref("ErrorBody"))
		r["description"] = desc
		return r
	}
	errors := map[string]any{
		"400": errResp("the inputs are not those of the signature (type input names the field), or the body is not a JSON object"),
		"402": errResp("the call's budget could not hold the next request"),
		"413": errResp("the body is larger than the handler allows"),
		"422": errResp("the model's reply could not be read (parse, truncated: with the reply and what was read) or was a refusal"),
		"429": errResp("the LM's rate limit after the retries, or every call slot of the handler is taken (busy); see Retry-After"),
		"502": errResp("the LM failed"),
		"504": errResp("the call ran out of time"),
	}
	withErrors := func(ok map[string]any) map[string]any {
		r := maps.Clone(errors)
		r["200"] = ok
		return r
	}
	predictOK := jsonBody(ref("Response"))
	predictOK["description"] = "the outputs"
	streamOK := map[string]any{"description": "Server-Sent Events: field, reasoning, tool_calls, tool, status, reask, attempt, then done (a Response) or error (an ErrorBody's error and the status)",
		"content": map[string]any{"text/event-stream": map[string]any{"schema": map[string]any{"type": "string"}}}}
	prepareOK := jsonBody(map[string]any{"type": "object", "properties": map[string]any{"request": map[string]any{"type": "object", "description": "the chat completion request, as sent"}}})
	prepareOK["description"] = "the request the module would send, nothing sent"
	inputsBody := jsonBody(ref("Inputs"))
	inputsBody["required"] = true
	simple := func(desc string) map[string]any {
		return map[string]any{"200": map[string]any{"description": desc}}
	}
	return map[string]any{
		"openapi": "3.1.0",
		"info":    map[string]any{"title": title, "version": "1", "description": sig.Instructions()},
		"paths": map[string]any{
			"/predict":      map[string]any{"post": map[string]any{"operationId": "predict", "requestBody": inputsBody, "responses": withErrors(predictOK)}},
			"/stream":       map[string]any{"post": map[string]any{"operationId": "stream", "requestBody": inputsBody, "responses": withErrors(streamOK)}},
			"/prepare":      map[string]any{"post": map[string]any{"operationId": "prepare", "requestBody": inputsBody, "responses": withErrors(prepareOK)}},
			"/schema":       map[string]any{"get": map[string]any{"operationId": "schema", "responses": simple("the inputs' and outputs' JSON Schema")}},
			"/openapi.json": map[string]any{"get": map[string]any{"operationId": "openapi", "responses": simple("this document")}},
			"/healthz":      map[string]any{"get": map[string]any{"operationId": "health", "responses": simple("the process serves")}},
			"/readyz":       map[string]any{"get": map[string]any{"operationId": "ready", "responses": simple("ready; 503 when not")}},
		},
		"components": map[string]any{"schemas": map[string]any{
			"Inputs":  in,
			"Outputs": out,
			"Response": map[string]any{"type": "object", "required": []string{"outputs", "usage", "counts"}, "properties": map[string]any{
				"outputs": ref("Outputs"),
				"choices": map[string]any{"type": "array", "items": ref("Outputs")},
				"adapter": map[string]any{"type": "string"}, "model": map[string]any{"type": "string"}, "mode": map[string]any{"type": "string"},
				"usage":  map[string]any{"type": "object"},
				"counts": map[string]any{"type": "object"},
				"notes":  map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
			}},
			"ErrorBody": map[string]any{"type": "object", "required": []string{"error"}, "properties": map[string]any{
				"error": map[string]any{"type": "object", "required": []string{"type", "message"}, "properties": map[string]any{
					"type":       map[string]any{"type": "string", "enum": []string{"bad_json", "bad_body", "body_too_large", "input", "parse", "refusal", "truncated", "budget", "rate_limited", "busy", "lm_error", "timeout", "canceled", "unsupported", "not_ready", "internal"}},
					"message":    map[string]any{"type": "string"},
					"field":      map[string]any{"type": "string"},
					"completion": map[string]any{"type": "string"},
					"partial":    map[string]any{"type": "object"},
				}},
			}},
		}},
	}, nil
}
