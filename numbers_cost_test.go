package adapter_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/signature"
)

// TestHugeNumbersLinear: a number with a million digits in an int field is
// refused with work linear in its length (security review round 3, N6:
// big.Rat read 2 MiB of digits in 8.3 s, allocating gigabytes), in every
// adapter and in ParseValue, and the ordinary spellings of whole numbers
// keep their exact values.
func TestHugeNumbersLinear(t *testing.T) {
	if testing.Short() {
		t.Skip("large inputs")
	}
	sig := mustParse(t, "q -> n: int")
	const n = 1 << 20
	for name, num := range map[string]string{
		"digits":          strings.Repeat("9", n),
		"negative digits": "-" + strings.Repeat("9", n),
		"fraction":        "1." + strings.Repeat("0", n) + "1",
		"exponent":        "1" + strings.Repeat("0", n) + "e-5",
		"separators":      "1" + strings.Repeat(",000", n/4),
	} {
		for _, c := range []struct {
			a    string
			text string
		}{
			{"chat", "[[ ## n ## ]]\n" + num},
			{"json", `{"n": ` + num + `}`},
			{"json string", `{"n": "` + num + `"}`},
			{"xml", "<n>" + num + "</n>"},
			{"ParseValue", num},
		} {
			var err error
			_, bytes := allocated(func() {
				switch c.a {
				case "chat":
					_, err = adapter.Chat{}.Parse(sig, c.text)
				case "json", "json string":
					_, err = adapter.JSON{}.Parse(sig, c.text)
				case "xml":
					_, err = adapter.XML{}.Parse(sig, c.text)
				default:
					_, err = adapter.ParseValue(c.text, sig.Output(0))
				}
			})
			label := fmt.Sprintf("%s/%s", name, c.a)
			if name == "separators" && c.a == "json" {
				continue // not JSON at all
			}
			require.Error(t, err, label)
			var pe *adapter.ParseError
			if c.a != "ParseValue" {
				assert.True(t, errors.As(err, &pe), "%s: %v", label, err)
			}
			assert.Contains(t, err.Error(), `"n"`, label)
			assert.Less(t, bytes, uint64(16*len(c.text)+8<<20), "%s: allocated %d MiB for %d bytes", label, bytes>>20, len(c.text))
		}
	}
	for text, want := range map[string]int{"1e3": 1000, "1,000": 1000, "3.0": 3, "-4.50e1": -45, "1.000": 1, "0.0": 0, "-0": 0, "9223372036854775807": 9223372036854775807,
		"-9223372036854775808": -9223372036854775808, "92233720368547758.07e2": 9223372036854775807, "0.00000e400": 0, "12.5e-1e": 0} {
		got, err := adapter.ParseValue(text, sig.Output(0))
		if text == "12.5e-1e" {
			assert.Error(t, err, text)
			continue
		}
		if assert.NoError(t, err, text) {
			assert.Equal(t, want, got, text)
		}
	}
	for _, text := range []string{"9223372036854775808", "-9223372036854775809", "1e19", "1.5", "1e-3", "123e-2", "1e401"} {
		_, err := adapter.ParseValue(text, sig.Output(0))
		if assert.Error(t, err, text) {
			assert.Contains(t, err.Error(), "invalid value", text)
		}
	}
}

// BenchmarkHugeNumber reads an int field holding 256 KiB and 1 MiB of
// digits through ParseValue and the JSON adapter: work linear in the
// digits (security review round 3, N6: 2 MiB took 8.3 s through big.Rat).
func BenchmarkHugeNumber(b *testing.B) {
	sig := must(signature.Parse("q -> n: int"))
	for _, n := range []int{1 << 18, 1 << 20} {
		num := strings.Repeat("9", n)
		b.Run(fmt.Sprintf("ParseValue/digits=%dKiB", n>>10), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				_, _ = adapter.ParseValue(num, sig.Output(0))
			}
		})
		text := `{"n": ` + num + `}`
		b.Run(fmt.Sprintf("json/digits=%dKiB", n>>10), func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				_, _ = adapter.JSON{}.Parse(sig, text)
			}
		})
	}
}
