// Package dspygo runs the reference workload of DESIGN.md (signature
// "question, context -> reasoning, answer", 3 demos, an in-process LM that
// returns a canned completion) through this library and through dspy-go
// v0.87.1, side by side in one test binary, so the two can be compared
// under the same load. It is a separate module: dspy-go is not a
// dependency of the library, and it needs Go 1.27
// (GOTOOLCHAIN=go1.27.0, which the Go module proxy provides).
//
//	cd bench/dspygo && GOTOOLCHAIN=go1.27.0 go test -run '^$' -bench . -benchmem -count 6
package dspygo
