package adapter_test

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sigwire/adapter/internal/golden"
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

// addCorpusSeeds seeds a fuzz target with every completion of the golden
// and corpus files and every leniency case for the adapter ("" for
// all).
func addCorpusSeeds(f *testing.F, adapterName string) {
	f.Helper()
	for _, pattern := range []string{"testdata/dspy_golden*.json", "testdata/malformed*.json"} {
		cases, err := golden.LoadGlob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		for _, c := range cases {
			if c.Completion != "" && (adapterName == "" || c.Adapter == adapterName) {
				f.Add(c.Completion)
			}
		}
	}
	for _, c := range leniencyCases {
		if adapterName == "" || c.adapter == adapterName {
			f.Add(c.reply)
		}
	}
}
