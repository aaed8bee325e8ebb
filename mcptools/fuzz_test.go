package mcptools_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/sigwire/adapter/mcptools"
)

// FuzzArguments gives NewTool arbitrary bytes as a tool's input schema
// (decoded as a listing decodes it, or left as raw bytes when they are not
// JSON), under small bounds so that both are reached: it never panics, and
// it returns an error naming the tool, or arguments that are valid JSON
// within the bound and exactly what resolving the references in place
// without any bound (the resolver before P4, naiveArguments) writes. The
// seeds are in testdata/fuzz/FuzzArguments.
func FuzzArguments(f *testing.F) {
	const maxBytes, maxDepth = 4096, 16
	cs := inProcess(f, newWeatherServer(f))
	f.Fuzz(func(t *testing.T, data []byte) {
		var schema any = json.RawMessage(data)
		var decoded any
		valid := json.Unmarshal(data, &decoded) == nil
		if valid {
			schema = decoded
		}
		tool, err := mcptools.NewTool(cs, &mcp.Tool{Name: "f", InputSchema: schema}, mcptools.WithMaxSchemaBytes(maxBytes), mcptools.WithMaxRefDepth(maxDepth))
		if err != nil {
			require.True(t, strings.HasPrefix(err.Error(), "mcptools: tool f: "), "%v", err)
			return
		}
		require.True(t, valid, "bytes that are not JSON were taken as a schema")
		require.True(t, json.Valid(tool.Args), "%s", tool.Args)
		require.LessOrEqual(t, len(tool.Args), maxBytes)
		want, err := naiveArguments(decoded)
		require.NoError(t, err)
		require.Equal(t, string(want), string(tool.Args))
	})
}

// naiveArguments is how NewTool resolved an input schema before the bounds
// of P4: it builds the resolved value, copying a definition at every
// reference, and writes it with encoding/json. It is only run on schemas
// whose resolution NewTool found within its bound, so its work is bounded
// by the same.
func naiveArguments(schema any) (json.RawMessage, error) {
	if schema == nil {
		return json.RawMessage("{}"), nil
	}
	b, err := json.Marshal(schema)
	if err != nil {
		return nil, err
	}
	var root map[string]any
	if err := json.Unmarshal(b, &root); err != nil {
		return nil, err
	}
	raw, ok := root["properties"]
	if !ok || raw == nil {
		return json.RawMessage("{}"), nil
	}
	props := raw.(map[string]any)
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
			props[name] = naiveResolve(p, defs, map[string]bool{})
		}
	}
	return json.Marshal(props)
}

func naiveResolve(v any, defs map[string]any, open map[string]bool) any {
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
			return naiveResolve(def, defs, open)
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = naiveResolve(e, defs, open)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = naiveResolve(e, defs, open)
		}
		return out
	}
	return v
}
