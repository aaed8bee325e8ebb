package adapter_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	adapter "github.com/sigwire/adapter"
)

// TestCallAdapter: CallAdapter names the adapter a call resolves to, by the
// rule Call uses (call option, then context, then the defaults, then the
// default adapter), and the built-in adapters switch native function
// calling on.
func TestCallAdapter(t *testing.T) {
	ctx := context.Background()
	xml := adapter.XML{}
	assert.Equal(t, adapter.DefaultAdapter(), adapter.CallAdapter(ctx))
	assert.Equal(t, xml, adapter.CallAdapter(ctx, adapter.Defaults(adapter.UseAdapter(xml))))
	inCtx := adapter.WithAdapter(ctx, adapter.JSON{})
	assert.Equal(t, adapter.JSON{}, adapter.CallAdapter(inCtx, adapter.Defaults(adapter.UseAdapter(xml))), "the context beats a module's default")
	assert.Equal(t, xml, adapter.CallAdapter(inCtx, adapter.UseAdapter(xml)), "a call's option beats the context")

	for a, want := range map[adapter.NativeToolAdapter]adapter.Adapter{
		adapter.Chat{NoFallback: true}:    adapter.Chat{NoFallback: true, NativeTools: true},
		adapter.XML{}:                     adapter.XML{NativeTools: true},
		adapter.JSON{NoNativeTools: true}: adapter.JSON{},
	} {
		assert.Equal(t, want, a.WithNativeTools())
	}
}
