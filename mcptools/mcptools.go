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
package mcptools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
// returns each as NewTool converts it. The tools call the server through
// session; they fail once it is closed.
func Tools(ctx context.Context, session *mcp.ClientSession) ([]types.Tool, error) {
	if session == nil {
		return nil, errors.New("mcptools: nil session")
	}
	var out []types.Tool
	for t, err := range session.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("mcptools: listing the server's tools: %w", err)
		}
		tool, err := NewTool(session, t)
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
// Calling the tool sends the arguments, which must be one JSON object, as
// they are. A result the server marks as an error (isError) is returned as
// a *ToolError, which ReAct shows the model as the step's observation, as
// it shows a Go tool's error. Otherwise the result is the text of the
// result's content: text parts as they are, other parts described
// ("[image: image/png, 2048 bytes]"), one per line; a result with no
// content but structured content is that content's JSON.
func NewTool(c Caller, t *mcp.Tool) (types.Tool, error) {
	if c == nil || t == nil {
		return types.Tool{}, errors.New("mcptools: NewTool needs a caller and a tool")
	}
	if t.Name == "" {
		return types.Tool{}, errors.New("mcptools: a listed tool has no name")
	}
	props, err := arguments(t.InputSchema)
	if err != nil {
		return types.Tool{}, fmt.Errorf("mcptools: tool %s: input schema: %w", t.Name, err)
	}
	name := t.Name
	tool, err := types.NewTool(name, t.Description, func(ctx context.Context, args rawArgs) (string, error) {
		res, err := c.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(args.raw)})
		if err != nil {
			return "", fmt.Errorf("mcptools: tool %s: %w", name, err)
		}
		if res == nil {
			return "", fmt.Errorf("mcptools: tool %s: no result", name)
		}
		text := resultText(res)
		if res.IsError {
			return "", &ToolError{Tool: name, Text: text}
		}
		return text, nil
	})
	if err != nil {
		return types.Tool{}, fmt.Errorf("mcptools: tool %s: %w", name, err)
	}
	tool.Args = props
	return tool, nil
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
// references resolved.
func arguments(schema any) (json.RawMessage, error) {
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
	if len(defs) > 0 {
		for name, p := range props {
			props[name] = resolve(p, defs, map[string]bool{})
		}
	}
	return json.Marshal(props)
}

// resolve replaces {"$ref": "#/$defs/Name"} by the definition, inside v,
// as DSPy's _resolve_json_schema_reference does (by the reference's last
// segment); a reference inside its own definition stays a reference.
func resolve(v any, defs map[string]any, open map[string]bool) any {
	switch x := v.(type) {
	case map[string]any:
		if ref, ok := x["$ref"].(string); ok {
			name := ref[strings.LastIndex(ref, "/")+1:]
			def, ok := defs[name]
			if !ok || open[name] {
				return x
			}
			open[name] = true
			defer delete(open, name)
			return resolve(def, defs, open)
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = resolve(e, defs, open)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = resolve(e, defs, open)
		}
		return out
	}
	return v
}

// resultText is a tool result as the text the model is shown.
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
