package adapter_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/signature"
)

// TestCaseVariantKeys: a JSON answer whose output is named by keys that
// differ only in case is read the same way every time, by every adapter:
// the exact name wins; variants that agree give their value; variants
// that disagree, without the exact name, are ErrAmbiguous naming the
// field. Before, the first variant a Go map yielded won: "a" or "b" from
// one reply, at random.
func TestCaseVariantKeys(t *testing.T) {
	sig := mustParse(t, "q -> answer, n: int")
	for reply, want := range map[string]string{
		`{"Answer": "a", "ANSWER": "b", "n": 1}`:                   "error",
		`{"Answer": "a", "ANSWER": "b", "aNSWER": "a", "n": 1}`:    "error",
		`{"Answer": "a", "ANSWER": "a", "n": 1}`:                   "a",
		`{"Answer": "a", "answer": "b", "ANSWER": "c", "n": 1}`:    "b",
		`{"n": 1, "ANSWER": "x", "Answer": "y", "answer": "y"}`:    "y",
		`{"answer": {"Answer": 1}, "ANSWER": "b", "N": 1, "n": 1}`: "error-map",
	} {
		for _, a := range []interface {
			Name() string
			Parse(*signature.Signature, string) (adapter.Values, error)
		}{adapter.Chat{}, adapter.JSON{}, adapter.XML{}, adapter.BAML{}} {
			got := map[string]int{}
			for range 50 {
				v, err := a.Parse(sig, reply)
				switch {
				case err != nil:
					var pe *adapter.ParseError
					if errors.As(err, &pe) && pe.Field == "answer" && errors.Is(err, adapter.ErrAmbiguous) {
						got["error"]++
					} else {
						got[err.Error()]++
					}
				default:
					got[fmt.Sprint(v["answer"])]++
				}
			}
			assert.Len(t, got, 1, "%s, %s: one reading every time: %v", a.Name(), reply, got)
			if want != "error-map" {
				assert.Equal(t, 50, got[want], "%s, %s: %v", a.Name(), reply, got)
			}
		}
	}
}
