package redact

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTextProperty: the property of the types package's
// TestURLRedactionProperty, for URLs inside an error's text: over
// generated URLs whose password, user name, query values and fragment hold
// any characters that keep them in their place (a '/' or '@' in the
// password too, which url.Parse refuses, or reads as part of the host and
// path for a scheme other than http), quoted as a *url.Error quotes
// them (with spaces and escaped quotes) or bare between spaces, the text
// holds none of them, and the text around the URL is unchanged.
func TestTextProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	gen := func(alphabet string) string {
		r := []rune(alphabet)
		var b strings.Builder
		b.WriteString("Q")
		for range 8 + rng.IntN(4) {
			b.WriteRune(r[rng.IntN(len(r))])
		}
		return b.String()
	}
	for range 4000 {
		quoted := rng.IntN(2) == 0
		base := "abcXYZ019-._~!$'()*+,;:=%40%2F"
		extra := ""
		if quoted {
			extra = ` "` // a bare URL ends at a space or a quote
		} else {
			base = strings.ReplaceAll(base, "'", "")
		}
		user, pass := gen(base), gen(base+"/@[]"+extra)
		value, frag := gen(base+"?/@"+extra), gen(base+"?/@&#"+extra)
		var u string
		switch rng.IntN(4) {
		case 0:
			u = "http://" + user + ":" + pass + "@h.io/p?k=" + value + "#" + frag
		case 1:
			value = strings.ReplaceAll(value, "=", "") // a bare value ('=' would make it a key)
			u = "https://" + user + "@h.io/p?" + value
		case 2:
			u = "http://h.io/p?a=&k=" + value + "&b"
			user, pass = "", ""
		default:
			u = "ftp://" + user + ":" + pass + "@h.io?k=" + value
		}
		text := "mcptools: tool t: calling: Post " + u + " failed: connection refused"
		if quoted {
			text = fmt.Sprintf("mcptools: tool t: calling: Post %q: dial tcp 127.0.0.1:1: connection refused", u)
		}
		got := Text(text)
		for _, s := range []string{user, pass, value, frag} {
			if s != "" && strings.Contains(u, s) {
				require.NotContains(t, got, s, "%s", text)
			}
		}
		require.True(t, strings.HasPrefix(got, "mcptools: tool t: calling: Post "), got)
		if quoted {
			require.True(t, strings.HasSuffix(got, `": dial tcp 127.0.0.1:1: connection refused`), got)
		} else {
			require.True(t, strings.HasSuffix(got, " failed: connection refused"), got)
		}
	}
}

// TestRedactURLs: what stays and what goes, by example (a bare URL takes
// the punctuation after it: a query value's trailing comma goes with it).
func TestText(t *testing.T) {
	for in, want := range map[string]string{
		`Post "http://u:p@h:1/mcp?token=T&size=2#f": dial tcp`:   `Post "http://REDACTED@h:1/mcp?token=REDACTED&size=REDACTED#REDACTED": dial tcp`,
		`at wss://h/p?T, see https://x/@me and ftp://u@h`:        `at wss://h/p?REDACTED see https://x/@me and ftp://REDACTED@h`,
		`ftp://u:p:/w@h.io/x and http://[::1]:8/@me`:             `ftp://REDACTED@h.io/x and http://[::1]:8/@me`,
		`no URL: a://, ://b?c=d, 1http://h?k=v, "x://h?k=\"v\""`: `no URL: a://, ://b?c=d, 1http://h?k=REDACTED "x://h?k=REDACTED"`,
		`<http://h?k=v>'http://h?k=w'` + "`http://h?k=x`":        `<http://h?k=REDACTED>'http://h?k=REDACTED'` + "`http://h?k=REDACTED`",
	} {
		require.Equal(t, want, Text(in), in)
	}
}

// TestURLTwoColonHost: url.Parse reads "ftp://user:pa:/ss@host" (a scheme
// other than http) as the host "user:pa:" and the path "/ss@host"; the
// user and password are still redacted (the types package's copy of the
// rule showed them).
func TestURLTwoColonHost(t *testing.T) {
	for _, u := range []string{"ftp://user:pa:/ss@h.io?k=v", "ftp://Q;+)(--*=0-X:QX4:/,4a*X@h.io?k=v"} {
		got := URL(u)
		require.NotContains(t, got, "user")
		require.NotContains(t, got, "pa:")
		require.NotContains(t, got, "QX4")
		require.Contains(t, got, "@h.io?k="+Redacted)
	}
}
