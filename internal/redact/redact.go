// Package redact removes what may be a secret — userinfo, query values,
// fragments — from the URLs an error shows, so that errors can reach logs
// and a model's prompt: one rule for every package that reports a URL
// (types' downloads, mcptools' transport errors).
package redact

import (
	"net/url"
	"strings"
)

// Text redacts every URL in s, free text such as an error's: each "scheme://" and what follows it
// up to the end of the URL, which is the closing quote for a URL right
// after a '"' (as Go's *url.Error writes it: `Post "http://…": …`; an
// escaped quote inside does not end it), else the first space, quote,
// '<', '>' or '`'.
func Text(s string) string {
	var b strings.Builder
	done := 0 // s[:done] is written to b
	for {
		i := strings.Index(s[done:], "://")
		if i < 0 {
			break
		}
		i += done
		start := i
		for start > done && schemeByte(s[start-1]) {
			start--
		}
		for start < i && !letter(s[start]) {
			start++ // a scheme begins with a letter
		}
		if start == i {
			b.WriteString(s[done : i+3])
			done = i + 3
			continue
		}
		end := urlEnd(s, i+3, start > 0 && s[start-1] == '"')
		b.WriteString(s[done:start])
		b.WriteString(URL(s[start:end]))
		done = end
	}
	b.WriteString(s[done:])
	return b.String()
}

// urlEnd is where the URL whose authority begins at s[i] ends.
func urlEnd(s string, i int, quoted bool) int {
	for i < len(s) {
		c := s[i]
		switch {
		case quoted && c == '\\':
			i += 2
			continue
		case quoted && c == '"':
			return i
		case !quoted && (c <= ' ' || strings.IndexByte("\"'<>`", c) >= 0):
			return i
		}
		i++
	}
	return len(s)
}

func letter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func schemeByte(c byte) bool {
	return letter(c) || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'
}

// Redacted replaces a secret in a URL shown in an error.
const Redacted = "REDACTED"

// URL removes what may be a secret from a URL, so that an error can
// show it: the userinfo entirely (user name and password: a token is
// often given as the user name), every query value (the keys stay), and
// the fragment. It works on the text as written, whether or not it
// parses: a URL that does not parse loses everything from its authority
// up to its last '@'.
func URL(s string) string {
	s, frag, hasFrag := strings.Cut(s, "#")
	s, query, hasQuery := strings.Cut(s, "?")
	var b strings.Builder
	b.Grow(len(s) + len(query) + 2*len(Redacted))
	b.WriteString(userinfo(s))
	if hasQuery {
		b.WriteByte('?')
		for i, part := range strings.Split(query, "&") {
			if i > 0 {
				b.WriteByte('&')
			}
			key, value, ok := strings.Cut(part, "=")
			switch {
			case !ok && part != "":
				b.WriteString(Redacted) // a bare value: "?<token>"
			case ok:
				b.WriteString(key)
				b.WriteByte('=')
				if value != "" {
					b.WriteString(Redacted)
				}
			}
		}
	}
	if hasFrag && frag != "" {
		b.WriteString("#" + Redacted)
	}
	return b.String()
}

// userinfo removes the userinfo of a URL without its query and
// fragment: the part of the authority up to its last '@', as url.Parse
// reads it; in a URL that does not parse, up to the last '@' anywhere
// after the scheme.
func userinfo(s string) string {
	if !strings.Contains(s, "@") {
		return s
	}
	start := 0
	if i := strings.Index(s, "//"); i >= 0 {
		start = i + 2
	} else if i := strings.IndexByte(s, ':'); i >= 0 {
		start = i + 1 // an opaque URL: "http:user:pass@host"
	}
	end := len(s)
	// url.Parse reads "ftp://user:pa:/ss@host" (not http's) as the host
	// "user:pa:" and the path "/ss@host": a host with two colons outside
	// brackets is taken as a URL that does not parse.
	if u, err := url.Parse(s); err == nil && (strings.Count(u.Host, ":") < 2 || strings.HasPrefix(u.Host, "[")) {
		if u.User == nil && !strings.Contains(u.Opaque, "@") {
			return s // an '@' in the path ("https://host/@user/a.png")
		}
		if i := strings.IndexByte(s[start:], '/'); i >= 0 {
			end = start + i
		}
	}
	at := strings.LastIndexByte(s[start:end], '@')
	if at < 0 {
		return s
	}
	return s[:start] + Redacted + s[start+at:]
}
