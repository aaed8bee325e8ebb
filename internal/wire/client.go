package wire

import (
	"reflect"
	"unsafe"

	openai "github.com/sashabaranov/go-openai"
)

// ClientConfig returns the configuration of c, which go-openai keeps
// unexported, and the API key in it; false when c is not laid out as this
// reads it (a go-openai release that renamed or retyped the fields): the
// caller then treats c as a client it cannot see into. The configuration
// is c's own, not a copy: read it, never write it.
func ClientConfig(c *openai.Client) (cfg *openai.ClientConfig, authToken string, ok bool) {
	f := reflect.ValueOf(c).Elem().FieldByName("config")
	if !f.IsValid() || f.Type() != reflect.TypeFor[openai.ClientConfig]() {
		return nil, "", false
	}
	cfg = (*openai.ClientConfig)(unsafe.Pointer(f.UnsafeAddr()))
	token := reflect.ValueOf(cfg).Elem().FieldByName("authToken")
	if !token.IsValid() || token.Kind() != reflect.String {
		return nil, "", false
	}
	return cfg, token.String(), true
}
