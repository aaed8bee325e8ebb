package adapter

import (
	"strings"
	"testing"
)

// TestModelIndexAgreesWithTheTable: the first-byte index finds, for every
// name, what a scan of the whole table in its order finds.
func TestModelIndexAgreesWithTheTable(t *testing.T) {
	scan := func(model string) Capabilities {
		m := strings.ToLower(model)
		if i := strings.LastIndexByte(m, '/'); i >= 0 {
			m = m[i+1:]
		}
		for _, row := range modelTable {
			for _, p := range row.prefixes {
				if strings.HasPrefix(m, p) {
					return row.caps
				}
			}
		}
		return Capabilities{}
	}
	names := []string{"", "/", "x", "gpt", "GPT", "unknown-model", "openai/", "a/b/"}
	for _, row := range modelTable {
		for _, p := range row.prefixes {
			for _, n := range []string{p, p[:len(p)-1], p + "-mini", strings.ToUpper(p) + "-2025", "openrouter/" + p, p + "/x", "x" + p, p[:1]} {
				names = append(names, n)
			}
		}
	}
	for _, n := range names {
		if got, want := ModelCapabilities(n), scan(n); got != want {
			t.Errorf("ModelCapabilities(%q) = %v, the table says %v", n, got, want)
		}
	}
}
