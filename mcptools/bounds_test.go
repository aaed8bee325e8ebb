package mcptools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sigwire/adapter/mcptools"
	"github.com/sigwire/adapter/types"
)

// doubling is the schema of the security review's P4: definitions D0 …
// D(d-1), each an object whose two properties refer to the next, the last
// one's to a string. It is linear in d; resolved in place it holds 2^d
// copies of the string.
func doubling(d int) json.RawMessage {
	var defs []string
	for i := range d {
		next := fmt.Sprintf(`{"$ref":"#/$defs/D%d"}`, i+1)
		if i == d-1 {
			next = `{"$ref":"#/$defs/Leaf"}`
		}
		defs = append(defs, fmt.Sprintf(`"D%d":{"type":"object","properties":{"a":%s,"b":%s}}`, i, next, next))
	}
	defs = append(defs, `"Leaf":{"type":"string"}`)
	return json.RawMessage(`{"type":"object","properties":{"q":{"$ref":"#/$defs/D0"}},"$defs":{` + strings.Join(defs, ",") + `}}`)
}

// chain is a schema whose references nest d deep: D0's property refers to
// D1, and so on; the last definition is a string.
func chain(d int) json.RawMessage {
	var defs []string
	for i := range d - 1 {
		defs = append(defs, fmt.Sprintf(`"D%d":{"type":"object","properties":{"next":{"$ref":"#/$defs/D%d"}}}`, i, i+1))
	}
	defs = append(defs, fmt.Sprintf(`"D%d":{"type":"string"}`, d-1))
	return json.RawMessage(`{"type":"object","properties":{"q":{"$ref":"#/$defs/D0"}},"$defs":{` + strings.Join(defs, ",") + `}}`)
}

// allocated is what f allocates on the heap, in bytes.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// doublingSize is the length of doubling(d)'s arguments resolved:
// {"q":N(d)}, where N(0) is {"type":"string"} and N(k) is
// {"properties":{"a":N(k-1),"b":N(k-1)},"type":"object"}.
func doublingSize(d int) int {
	n := len(`{"type":"string"}`)
	for range d {
		n = len(`{"properties":{"a":`) + n + len(`,"b":`) + n + len(`},"type":"object"}`)
	}
	return len(`{"q":`) + n + len(`}`)
}

// TestSchemaBomb is the security review's reproduction (P4): for the
// doubling schema at depths 1 to 30 (30 would expand to 2^30 copies, some
// 60 GB), NewTool resolves it when its resolution fits the default 64 KiB
// and otherwise refuses it with ErrSchemaTooLarge, an error that names the
// tool and the bound; either way it allocates under 4 MiB (about 1 MiB;
// without the bound, depth 16 allocated 48 MiB and depth 20 781 MiB): the
// expansion is never built.
func TestSchemaBomb(t *testing.T) {
	require.LessOrEqual(t, doublingSize(10), mcptools.DefaultMaxSchemaBytes, "the test's precondition: some depths resolve")
	require.Greater(t, doublingSize(12), mcptools.DefaultMaxSchemaBytes, "the test's precondition: the review's depths, 12 to 30, are past the bound")
	cs := inMemory(t, newWeatherServer(t))
	for d := 1; d <= 30; d++ {
		schema := doubling(d)
		var tool types.Tool
		var err error
		n := allocated(func() { tool, err = mcptools.NewTool(cs, &mcp.Tool{Name: "lookup", InputSchema: schema}) })
		require.Less(t, n, uint64(4<<20), "depth %d: %d bytes allocated", d, n)
		if doublingSize(d) <= mcptools.DefaultMaxSchemaBytes {
			require.NoError(t, err, "depth %d", d)
			require.True(t, json.Valid(tool.Args), "depth %d", d)
			require.Len(t, tool.Args, doublingSize(d), "depth %d", d)
			require.Equal(t, 1<<d, strings.Count(string(tool.Args), `{"type":"string"}`), "depth %d: every copy is there", d)
			continue
		}
		require.ErrorIs(t, err, mcptools.ErrSchemaTooLarge, "depth %d", d)
		require.EqualError(t, err, "mcptools: tool lookup: input schema too large: its arguments' JSON, $refs resolved, passes 65536 bytes (WithMaxSchemaBytes)", "depth %d", d)
	}
	tool, err := mcptools.NewTool(cs, &mcp.Tool{Name: "lookup", InputSchema: doubling(2)})
	require.NoError(t, err)
	d1 := `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}}}`
	assert.JSONEq(t, `{"q":{"type":"object","properties":{"a":`+d1+`,"b":`+d1+`}}}`, string(tool.Args))
}

// TestSchemaBytes: the byte bound is on the resolved arguments' JSON as a
// whole, with or without references (a tool with many properties), to
// the byte; WithMaxSchemaBytes raises or lowers it, n < 1 is the default.
func TestSchemaBytes(t *testing.T) {
	cs := inMemory(t, newWeatherServer(t))
	props := map[string]any{}
	for i := range 1000 {
		props[fmt.Sprintf("field_%04d", i)] = map[string]any{"type": "string", "description": "one of the many fields of a wide form"}
	}
	wide := &mcp.Tool{Name: "wide", InputSchema: map[string]any{"type": "object", "properties": props}}
	want, err := json.Marshal(props)
	require.NoError(t, err)
	require.Greater(t, len(want), mcptools.DefaultMaxSchemaBytes, "the test's precondition: a large schema without references")

	for _, opts := range [][]mcptools.Option{nil, {mcptools.WithMaxSchemaBytes(0)}, {mcptools.WithMaxSchemaBytes(1 << 20), mcptools.WithMaxSchemaBytes(-1)}, {nil}} {
		_, err = mcptools.NewTool(cs, wide, opts...)
		require.ErrorIs(t, err, mcptools.ErrSchemaTooLarge)
		assert.EqualError(t, err, "mcptools: tool wide: input schema too large: its arguments' JSON, $refs resolved, passes 65536 bytes (WithMaxSchemaBytes)")
	}
	tool, err := mcptools.NewTool(cs, wide, mcptools.WithMaxSchemaBytes(len(want)))
	require.NoError(t, err, "exactly at the bound")
	assert.Equal(t, string(want), string(tool.Args), "as encoding/json writes the properties")
	_, err = mcptools.NewTool(cs, wide, mcptools.WithMaxSchemaBytes(len(want)-1))
	assert.ErrorIs(t, err, mcptools.ErrSchemaTooLarge, "one byte past the bound")

	// With references: the bound is on what they resolve to.
	weather := json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"unit":{"$ref":"#/$defs/Unit"}},"$defs":{"Unit":{"type":"string","enum":["C","F"]}}}`)
	resolved := `{"city":{"type":"string"},"unit":{"enum":["C","F"],"type":"string"}}`
	tool, err = mcptools.NewTool(cs, &mcp.Tool{Name: "weather", InputSchema: weather}, mcptools.WithMaxSchemaBytes(len(resolved)))
	require.NoError(t, err)
	assert.Equal(t, resolved, string(tool.Args))
	_, err = mcptools.NewTool(cs, &mcp.Tool{Name: "weather", InputSchema: weather}, mcptools.WithMaxSchemaBytes(len(resolved)-1))
	require.ErrorIs(t, err, mcptools.ErrSchemaTooLarge)
	assert.EqualError(t, err, fmt.Sprintf("mcptools: tool weather: input schema too large: its arguments' JSON, $refs resolved, passes %d bytes (WithMaxSchemaBytes)", len(resolved)-1))
}

// TestSchemaDepth: references may nest 32 deep by default; WithMaxRefDepth
// raises or lowers that, n < 1 is the default.
func TestSchemaDepth(t *testing.T) {
	cs := inMemory(t, newWeatherServer(t))
	nested := func(d int) string { // what chain(d) resolves to
		return `{"q":` + strings.Repeat(`{"properties":{"next":`, d-1) + `{"type":"string"}` + strings.Repeat(`},"type":"object"}`, d-1) + `}`
	}
	tool, err := mcptools.NewTool(cs, &mcp.Tool{Name: "deep", InputSchema: chain(32)})
	require.NoError(t, err, "32 deep is within the default")
	assert.Equal(t, nested(32), string(tool.Args))

	for _, opts := range [][]mcptools.Option{nil, {mcptools.WithMaxRefDepth(0)}, {mcptools.WithMaxRefDepth(-3)}} {
		_, err = mcptools.NewTool(cs, &mcp.Tool{Name: "deep", InputSchema: chain(33)}, opts...)
		require.ErrorIs(t, err, mcptools.ErrSchemaTooLarge)
		assert.EqualError(t, err, "mcptools: tool deep: input schema too large: its $refs nest more than 32 deep (WithMaxRefDepth)")
	}
	tool, err = mcptools.NewTool(cs, &mcp.Tool{Name: "deep", InputSchema: chain(100)}, mcptools.WithMaxRefDepth(100))
	require.NoError(t, err)
	assert.Equal(t, nested(100), string(tool.Args))
	_, err = mcptools.NewTool(cs, &mcp.Tool{Name: "deep", InputSchema: chain(3)}, mcptools.WithMaxRefDepth(2))
	require.ErrorIs(t, err, mcptools.ErrSchemaTooLarge)
	assert.EqualError(t, err, "mcptools: tool deep: input schema too large: its $refs nest more than 2 deep (WithMaxRefDepth)")
}

// TestToolsSchemaBomb: a server listing one tool whose schema is past the
// bound fails Tools with that tool's error; the options reach NewTool; and
// what Tools' documentation suggests keeps the other tools: list with the
// SDK and call NewTool for each, skipping the ones it refuses.
func TestToolsSchemaBomb(t *testing.T) {
	ws := newWeatherServer(t)
	ws.AddTool(&mcp.Tool{Name: "bomb", Description: "Its schema expands to 2^14 copies.", InputSchema: doubling(14)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	cs := inMemory(t, ws)
	ctx := context.Background()

	_, err := mcptools.Tools(ctx, cs)
	require.ErrorIs(t, err, mcptools.ErrSchemaTooLarge)
	assert.ErrorContains(t, err, "mcptools: tool bomb: input schema too large")

	tools, err := mcptools.Tools(ctx, cs, mcptools.WithMaxSchemaBytes(1<<20))
	require.NoError(t, err, "a raised bound")
	require.Len(t, tools, 4)
	assert.Equal(t, 1<<14, strings.Count(string(byName(tools)["bomb"].Args), `{"type":"string"}`))

	var kept []string
	for listed, err := range cs.Tools(ctx, nil) {
		require.NoError(t, err)
		tool, err := mcptools.NewTool(cs, listed)
		if err != nil {
			assert.ErrorIs(t, err, mcptools.ErrSchemaTooLarge)
			continue
		}
		kept = append(kept, tool.Name)
	}
	assert.ElementsMatch(t, []string{"weather", "broken", "slow"}, kept)
}
