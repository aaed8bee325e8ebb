// Package adapter turns a [signature.Signature] into chat messages for a
// language model and the model's reply into typed Go values, as DSPy's
// adapter layer does in Python, with byte-identical prompts.
//
// The pipeline, the Chat, JSON, XML and TwoStep adapters, and streaming are
// being built; see the README's feature table for what works today.
package adapter

import "github.com/sigwire/adapter/signature"

// ensure the doc link above resolves.
var _ *signature.Signature
