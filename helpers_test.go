package adapter_test

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sigwire/adapter/signature"
	"github.com/sigwire/adapter/types"
)

func mustParse(t testing.TB, spec string) *signature.Signature {
	t.Helper()
	sig, err := signature.Parse(spec)
	require.NoError(t, err)
	return sig
}

func typeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }

func typesNames() map[string]reflect.Type { return types.Names() }
