// Package serve serves a module of package predict — or any [Module] —
// over HTTP, with the standard library only: a [Handler] answers
//
//	POST /predict      the inputs as a JSON object → the outputs (and usage, counts, notes)
//	POST /stream       the same, as Server-Sent Events of the module's chunks
//	POST /prepare      the request the module would send for the inputs, without calling the LM
//	GET  /schema       the inputs' and outputs' JSON Schema
//	GET  /openapi.json an OpenAPI 3.1 document of the service
//	GET  /healthz      200 while the process serves
//	GET  /readyz       200 when Handler.Ready says so
//
// Errors are JSON bodies {"error": {"type", "message", "field", …}} with
// the status of one table ([StatusOf]): inputs 400, an oversize body 413,
// a reply that could not be read 422 (with what was read), a refusal 422,
// a budget spent 402, a rate limit 429 (with Retry-After), a full handler
// 429, an LM failure 502, a timeout 504. Mount a Handler under a prefix
// with http.StripPrefix. docs/serve.md has the event names and payloads.
package serve
