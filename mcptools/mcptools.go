// Package mcptools gives a ReAct agent the tools of an MCP server: the
// tools a server lists (github.com/modelcontextprotocol/go-sdk) become
// types.Tool values, with their JSON schemas, that call the server when
// the agent runs them, as DSPy's dspy.Tool.from_mcp_tool does.
//
//	session, err := client.Connect(ctx, transport, nil)
//	tools, err := mcptools.Tools(ctx, session)
//	agent, err := predict.NewReAct(sig, tools)
//
// It is a module of its own so that the library keeps its four
// dependencies; it builds on the library's public API.
//
// A tool passes the model's arguments to the server as they were
// validated: the JSON object the trace shows (adapter.Trace's ToolStart),
// its keys and values unchanged, never re-decoded into a Go type on the
// way. Arguments that are not one JSON object, or that give a key twice,
// are refused before anything is sent.
//
// A tool's input schema comes from the server and its arguments' JSON,
// references resolved, goes into every prompt that offers the tool, so
// resolving it is bounded: the resolved JSON may be at most 64 KiB long
// (DefaultMaxSchemaBytes, a bound on the whole, with or without
// references) and its references may nest at most 32 deep
// (DefaultMaxRefDepth). Resolving stops at a bound, so a schema whose
// references would expand exponentially (each of d definitions referring
// twice to the next makes 2^d copies) costs no more than the bound. A
// tool past a bound is refused with an error matching ErrSchemaTooLarge;
// the WithMaxSchemaBytes and WithMaxRefDepth options raise or lower the bounds.
//
// A tool call that fails without a result (the connection failed, the
// server answered with a JSON-RPC error) returns the Go SDK's error, and
// ReAct shows its text to the model: it goes to the provider in the next
// prompt. The SDK's errors can name the server's URL
// ("Post \"https://…?token=…\": …"), so every URL ("scheme://…") in the
// text of a call's error, and of a listing's error, is redacted as the
// library redacts URLs elsewhere (the types package's download errors):
// its userinfo (user name and password) and its fragment become REDACTED,
// and so does every query value, the keys staying ("?token=REDACTED");
// the path stays. A secret in a URL's path, or outside a URL, is not
// redacted. The error unwraps to the SDK's, so errors.Is and errors.As
// work; a *url.Error found with errors.As holds the URL unredacted, so
// log it with care. A result the server marks as an error (a *ToolError)
// carries the server's own text, unredacted.
package mcptools

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/internal/jsonx"
	"github.com/sigwire/adapter/types"
)

// Caller calls a tool on an MCP server. *mcp.ClientSession is one.
type Caller interface {
	CallTool(ctx context.Context, params *mcp.CallToolParams) (*mcp.CallToolResult, error)
}

// Tools lists every tool of the server behind session, page by page, and
// returns each as NewTool converts it, with opts. The tools call the
// server through session; they fail once it is closed.
//
// An error listing the tools is the SDK's error, with the URLs in its
// text redacted, as a tool call's is.
//
// One tool that NewTool refuses (an input schema past a bound, matching
// ErrSchemaTooLarge, or one that is not a schema) fails Tools with that
// tool's error. To keep the server's other tools, list them with the SDK
// (session.Tools) and call NewTool for each, skipping the tools it
// refuses, or raise the bound (WithMaxSchemaBytes, WithMaxRefDepth).
func Tools(ctx context.Context, session *mcp.ClientSession, opts ...Option) ([]types.Tool, error) {
	if session == nil {
		return nil, errors.New("mcptools: nil session")
	}
	var out []types.Tool
	for t, err := range session.Tools(ctx, nil) {
		if err != nil {
			return nil, &redactedError{prefix: "mcptools: listing the server's tools: ", err: err}
		}
		tool, err := NewTool(session, t, opts...)
		if err != nil {
			return nil, err
		}
		out = append(out, tool)
	}
	return out, nil
}

// NewTool returns t as a types.Tool that calls it through c: its name, its
// description, and its arguments' JSON schemas (the input schema's
// properties, with "$ref"s to "$defs" or "definitions" resolved in
// place, as DSPy's convert_input_schema_to_tool_args does; a reference
// that leads back to itself is left as it is).
//
// The arguments' JSON, references resolved, is bounded, for it is in
// every prompt that offers the tool: it may be at most WithMaxSchemaBytes long
// (by default DefaultMaxSchemaBytes, 64 KiB) and its references may nest
// at most WithMaxRefDepth deep (by default DefaultMaxRefDepth, 32). The byte
// bound is on the resolved JSON as a whole, whether it is large by its
// references or by itself (a tool with many properties). Resolving stops
// at the bound, so a schema whose references would expand exponentially
// costs no more than the bound. Past either bound, NewTool returns an
// error that names the tool and the bound and matches ErrSchemaTooLarge.
//
// Calling the tool sends the arguments, which must be one JSON object, as
// they are. A result the server marks as an error (isError) is returned as
// a *ToolError, which ReAct shows the model as the step's observation, as
// it shows a Go tool's error. Otherwise the result is the text of the
// result's content: text parts as they are, other parts described
// ("[image: image/png, 2048 bytes]"), one per line; a result with no
// content but structured content is that content's JSON. A call that
// gets no result (the connection failed, the server answered with a
// JSON-RPC error, the context is done) returns the SDK's error as
// "mcptools: tool <name>: <error>", with the URLs in its text redacted
// (see the package documentation); errors.Is and errors.As reach the
// SDK's error itself.
func NewTool(c Caller, t *mcp.Tool, opts ...Option) (types.Tool, error) {
	if c == nil || t == nil {
		return types.Tool{}, errors.New("mcptools: NewTool needs a caller and a tool")
	}
	if t.Name == "" {
		return types.Tool{}, errors.New("mcptools: a listed tool has no name")
	}
	o := options{maxBytes: DefaultMaxSchemaBytes, maxDepth: DefaultMaxRefDepth}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	props, err := arguments(t.InputSchema, o)
	switch {
	case errors.Is(err, ErrSchemaTooLarge):
		return types.Tool{}, fmt.Errorf("mcptools: tool %s: %w", t.Name, err)
	case err != nil:
		return types.Tool{}, fmt.Errorf("mcptools: tool %s: input schema: %w", t.Name, err)
	}
	name := t.Name
	tool, err := types.NewTool(name, t.Description, func(ctx context.Context, args rawArgs) (any, error) {
		res, err := c.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(args.raw)})
		if err != nil {
			return nil, &redactedError{prefix: "mcptools: tool " + name + ": ", err: err}
		}
		if res == nil {
			return nil, fmt.Errorf("mcptools: tool %s: no result", name)
		}
		if res.IsError {
			return nil, &ToolError{Tool: name, Text: resultText(res)}
		}
		return resultValue(res), nil
	})
	if err != nil {
		return types.Tool{}, fmt.Errorf("mcptools: tool %s: %w", name, err)
	}
	tool.Args = props
	return tool, nil
}

// ErrSchemaTooLarge is matched (errors.Is) by the error of NewTool and
// Tools for a tool whose input schema passes a bound: its arguments' JSON,
// references resolved, is longer than WithMaxSchemaBytes, or its references
// nest deeper than WithMaxRefDepth. The error names the tool, the bound and
// its value.
var ErrSchemaTooLarge = errors.New("input schema too large")

// The bounds of NewTool and Tools unless an Option sets them.
const (
	// DefaultMaxSchemaBytes bounds the length of a tool's arguments' JSON,
	// references resolved: 64 KiB.
	DefaultMaxSchemaBytes = 64 << 10
	// DefaultMaxRefDepth bounds how deep a tool's references nest: a
	// reference inside a definition that a reference brought in is two
	// deep.
	DefaultMaxRefDepth = 32
)

// Option sets a bound of NewTool and Tools.
type Option func(*options)

type options struct {
	maxBytes, maxDepth int
}

// WithMaxSchemaBytes sets the bound on the length of a tool's arguments' JSON,
// references resolved, in bytes; n < 1 is DefaultMaxSchemaBytes.
func WithMaxSchemaBytes(n int) Option {
	return func(o *options) {
		o.maxBytes = n
		if n < 1 {
			o.maxBytes = DefaultMaxSchemaBytes
		}
	}
}

// WithMaxRefDepth sets the bound on how deep a tool's references nest; n < 1
// is DefaultMaxRefDepth.
func WithMaxRefDepth(n int) Option {
	return func(o *options) {
		o.maxDepth = n
		if n < 1 {
			o.maxDepth = DefaultMaxRefDepth
		}
	}
}

// ToolError is a tool's result that the server marked as an error
// (isError): the tool ran and failed.
type ToolError struct {
	// Tool is the tool's name; Text is the result's content as text.
	Tool, Text string
}

// Error is DSPy's text for a failed MCP tool: "Failed to call a MCP tool:"
// and the result's text.
func (e *ToolError) Error() string { return "Failed to call a MCP tool: " + e.Text }

// rawArgs holds a call's arguments as they came: one JSON object.
type rawArgs struct{ raw json.RawMessage }

// UnmarshalJSON keeps b, which must be one JSON object without a key
// given twice with different values.
func (a *rawArgs) UnmarshalJSON(b []byte) error {
	v, err := jsonx.Decode(strings.TrimSpace(string(b)))
	var dup *jsonx.DuplicateKeyError
	switch {
	case errors.As(err, &dup):
		return fmt.Errorf("%w: %w", adapter.ErrAmbiguous, err)
	case err != nil:
		return err
	}
	if _, ok := v.(map[string]any); !ok {
		return fmt.Errorf("the arguments are %s, not a JSON object", kind(v))
	}
	a.raw = append(json.RawMessage(nil), b...)
	return nil
}

func kind(v any) string {
	switch v.(type) {
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a bool"
	case json.Number:
		return "a number"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// arguments returns the properties of an input schema as a JSON object,
// references resolved, within o's bounds.
func arguments(schema any, o options) (json.RawMessage, error) {
	if schema == nil {
		return json.RawMessage("{}"), nil
	}
	b, err := json.Marshal(schema)
	if err != nil {
		return nil, err
	}
	var root map[string]any
	if err := json.Unmarshal(b, &root); err != nil {
		return nil, errors.New("not a JSON object")
	}
	raw, ok := root["properties"]
	if !ok || raw == nil {
		return json.RawMessage("{}"), nil
	}
	props, ok := raw.(map[string]any)
	if !ok {
		return nil, errors.New(`"properties" is not an object`)
	}
	defs := map[string]any{}
	for _, k := range []string{"definitions", "$defs"} {
		if d, ok := root[k].(map[string]any); ok {
			for name, s := range d {
				defs[name] = s
			}
		}
	}
	r := resolver{defs: defs, open: map[string]bool{}, maxBytes: o.maxBytes, maxDepth: o.maxDepth}
	if err := r.write(props, true); err != nil {
		return nil, err
	}
	return r.buf, nil
}

// resolver writes a schema's JSON with every {"$ref": "#/$defs/Name"}
// replaced by the definition, as DSPy's _resolve_json_schema_reference
// does (by the reference's last segment; the reference's other keys are
// dropped), and as encoding/json writes the resolved value (keys sorted).
// A reference inside its own definition, or to no definition, stays as it
// is, and nothing inside it is resolved.
//
// It writes instead of building the resolved value, so that its bounds
// hold while it works: it stops at the first byte past maxBytes and at
// the first reference nested more than maxDepth deep. The work done is
// therefore in proportion to maxBytes (at most maxDepth steps for each
// byte written), however much a schema's references would expand: each
// of d definitions referring twice to the next one would make 2^d copies.
type resolver struct {
	defs     map[string]any
	open     map[string]bool // the definitions being written: len(open) is the nesting
	buf      []byte
	maxBytes int
	maxDepth int
}

// write writes v, its references resolved when refs is set.
func (r *resolver) write(v any, refs bool) error {
	switch x := v.(type) {
	case map[string]any:
		if ref, ok := x["$ref"].(string); ok && refs {
			name := ref[strings.LastIndex(ref, "/")+1:]
			if def, ok := r.defs[name]; ok && !r.open[name] {
				if len(r.open) >= r.maxDepth {
					return fmt.Errorf("%w: its $refs nest more than %d deep (WithMaxRefDepth)", ErrSchemaTooLarge, r.maxDepth)
				}
				r.open[name] = true
				defer delete(r.open, name)
				return r.write(def, true)
			}
			refs = false
		}
		if x == nil {
			return r.put("null")
		}
		if err := r.put("{"); err != nil {
			return err
		}
		for i, k := range slices.Sorted(maps.Keys(x)) {
			if i > 0 {
				if err := r.put(","); err != nil {
					return err
				}
			}
			if err := r.leaf(k); err != nil {
				return err
			}
			if err := r.put(":"); err != nil {
				return err
			}
			if err := r.write(x[k], refs); err != nil {
				return err
			}
		}
		return r.put("}")
	case []any:
		if x == nil {
			return r.put("null")
		}
		if err := r.put("["); err != nil {
			return err
		}
		for i, e := range x {
			if i > 0 {
				if err := r.put(","); err != nil {
					return err
				}
			}
			if err := r.write(e, refs); err != nil {
				return err
			}
		}
		return r.put("]")
	}
	return r.leaf(v)
}

// leaf writes a value without references (a string, number, bool or
// null) as encoding/json does.
func (r *resolver) leaf(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := r.room(len(b)); err != nil {
		return err
	}
	r.buf = append(r.buf, b...)
	return nil
}

// put appends s, unless that passes maxBytes.
func (r *resolver) put(s string) error {
	if err := r.room(len(s)); err != nil {
		return err
	}
	r.buf = append(r.buf, s...)
	return nil
}

// room reports whether n more bytes stay within maxBytes.
func (r *resolver) room(n int) error {
	if len(r.buf)+n > r.maxBytes {
		return fmt.Errorf("%w: its arguments' JSON, $refs resolved, passes %d bytes (WithMaxSchemaBytes)", ErrSchemaTooLarge, r.maxBytes)
	}
	return nil
}

// resultValue is a tool result as the model is shown it: its text (see
// resultText), unless it holds images, audio or embedded binary resources:
// then a list of its parts, text as strings and media as types.Image,
// types.Audio or types.File, which the model receives as content parts
// (ReAct's observation, ToolCalls.Execute's result). A media part the
// library refuses (an unknown media type, over its size limit) is
// described in the text instead, with why.
func resultValue(res *mcp.CallToolResult) any {
	var items []any
	media := false
	for _, c := range res.Content {
		if m, ok := contentMedia(c); ok {
			items, media = append(items, m), true
			continue
		}
		items = append(items, contentText(c))
	}
	if !media {
		return resultText(res)
	}
	return items
}

// contentMedia is a content part as a media value, when it is one the
// library can send.
func contentMedia(c mcp.Content) (any, bool) {
	var mime string
	var data []byte
	switch x := c.(type) {
	case *mcp.ImageContent:
		mime, data = x.MIMEType, x.Data
	case *mcp.AudioContent:
		mime, data = x.MIMEType, x.Data
	case *mcp.EmbeddedResource:
		if x.Resource == nil || x.Resource.Text != "" || len(x.Resource.Blob) == 0 {
			return nil, false
		}
		mime, data = x.Resource.MIMEType, x.Resource.Blob
	default:
		return nil, false
	}
	uri := "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(data)
	var v any
	var err error
	switch {
	case strings.HasPrefix(mime, "image/"):
		v, err = types.NewImage(uri)
	case strings.HasPrefix(mime, "audio/"):
		v, err = types.NewAudio(uri)
	default:
		v, err = types.NewFile(uri)
	}
	if err != nil {
		return nil, false
	}
	return v, true
}

// resultText is a tool result as text: each part's (see contentText), one
// per line.
func resultText(res *mcp.CallToolResult) string {
	if len(res.Content) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			return string(b)
		}
	}
	parts := make([]string, 0, len(res.Content))
	for _, c := range res.Content {
		parts = append(parts, contentText(c))
	}
	return strings.Join(parts, "\n")
}

// contentText is one content part as text: text as it is, anything else
// described.
func contentText(c mcp.Content) string {
	switch x := c.(type) {
	case *mcp.TextContent:
		return x.Text
	case *mcp.ImageContent:
		return fmt.Sprintf("[image: %s, %d bytes]", x.MIMEType, len(x.Data))
	case *mcp.AudioContent:
		return fmt.Sprintf("[audio: %s, %d bytes]", x.MIMEType, len(x.Data))
	case *mcp.ResourceLink:
		return fmt.Sprintf("[resource link: %s %q]", x.URI, x.Name)
	case *mcp.EmbeddedResource:
		switch r := x.Resource; {
		case r == nil:
			return "[resource]"
		case r.Text != "":
			return r.Text
		default:
			return fmt.Sprintf("[resource: %s, %s, %d bytes]", r.URI, r.MIMEType, len(r.Blob))
		}
	}
	return fmt.Sprintf("[%T content]", c)
}
