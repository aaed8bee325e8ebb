package types

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/sigwire/adapter/internal/redact"
)

// This file holds what the media types (Image, Audio, File, Document)
// share: the size limits, the data-URI reader, reading them from JSON and
// from a field's text, reading a local file, and downloads with their
// address check.

// MaxMediaBytes is the largest audio clip, file or document the
// constructors accept inline, and DownloadAudio's and DownloadFile's
// default limit: 32 MiB, the most OpenAI and Anthropic accept for a file
// in one request. Images keep their own limit, MaxImageBytes.
const MaxMediaBytes = 32 << 20

// media is what unmarshalMedia needs of Audio, File and Document (PT is
// the pointer to T): fields decodes a JSON object into the type's own
// fields (a type without methods, so that decoding does not recurse into
// UnmarshalJSON), check holds a value to the constructors' rules.
type media[T any] interface {
	*T
	fields(b []byte) error
	check() error
}

// unmarshalMedia is the UnmarshalJSON of Audio, File and Document: null
// leaves *dst as it is; a string is the value fromString makes of it; an
// object is decoded into a new value's fields, which is held to the
// constructors' rules. On a decoding error *dst is left as it is.
func unmarshalMedia[T any, PT media[T]](dst PT, b []byte, name string, fromString func(string) (T, error)) error {
	if string(bytes.TrimSpace(b)) == "null" {
		return nil
	}
	var s string
	if json.Unmarshal(b, &s) == nil {
		v, err := fromString(s)
		*dst = v
		return err
	}
	var v T
	if err := PT(&v).fields(b); err != nil {
		return fmt.Errorf("types: %s: %w", name, err)
	}
	*dst = v
	return dst.check()
}

// parseMedia is the ParseField of Audio and File: a JSON object as
// UnmarshalJSON reads it, any other text (a data URI) as fromString does.
func parseMedia[T any, PT media[T]](dst PT, raw, name string, fromString func(string) (T, error)) error {
	s := strings.TrimSpace(raw)
	if strings.HasPrefix(s, "{") {
		return unmarshalMedia(dst, []byte(s), name, fromString)
	}
	v, err := fromString(s)
	*dst = v
	return err
}

// dataURI is a data: URI split into its parts.
type dataURI struct {
	media  string // the media type, lower-cased, without parameters ("image/png"); "" when absent
	base64 bool   // the data is base64 (";base64" ends the header)
	data   string // what follows the comma, as written
}

// parseDataURI reads data:[<media type>][;<parameter>…][;base64],<data>.
// It checks the shape only: the media type's kind is the caller's to
// judge, and so is the data (see validBase64).
func parseDataURI(s string) (dataURI, error) {
	rest, ok := strings.CutPrefix(s, "data:")
	if !ok {
		return dataURI{}, fmt.Errorf("%q is not a data URI", clip(s))
	}
	if !utf8.ValidString(s) {
		// JSON would carry another text than the one given.
		return dataURI{}, fmt.Errorf("%q is not valid UTF-8", clip(s))
	}
	header, data, ok := strings.Cut(rest, ",")
	if !ok {
		return dataURI{}, fmt.Errorf("%q is not a data URI (no comma)", clip(s))
	}
	media, params, _ := strings.Cut(header, ";")
	d := dataURI{media: strings.ToLower(strings.TrimSpace(media)), data: data}
	d.base64 = params == "base64" || strings.HasSuffix(params, ";base64")
	if d.media != "" && !validMediaType(d.media) {
		return dataURI{}, fmt.Errorf("a data URI of %q, which is not a media type", clip(media))
	}
	return d, nil
}

// size is the number of bytes the data decodes to, at most.
func (d dataURI) size() int {
	if d.base64 {
		return base64.StdEncoding.DecodedLen(len(d.data))
	}
	return len(d.data)
}

// validMediaType reports a lower-case type/subtype of token characters,
// without parameters.
func validMediaType(s string) bool {
	typ, sub, ok := strings.Cut(s, "/")
	return ok && isToken(typ) && isToken(sub)
}

// isToken reports a non-empty lower-case MIME token (RFC 2045's characters,
// upper case excluded).
func isToken(s string) bool {
	if s == "" || len(s) > 127 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.ContainsRune("!#$&-^_.+", c)) {
			return false
		}
	}
	return true
}

// mediaType normalizes a Content-Type or a caller's MIME type: lower case,
// without parameters; "" when it is not a media type.
func mediaType(s string) string {
	m, _, err := mime.ParseMediaType(s)
	if err != nil || !validMediaType(m) {
		return ""
	}
	return m
}

// validBase64 reports standard base64 with padding, as providers decode
// it: the alphabet, a length that is a multiple of four, padding only at
// the end.
func validBase64(s string) bool {
	if len(s)%4 != 0 {
		return false
	}
	pad := 0
	for i := len(s) - 1; i >= 0 && i >= len(s)-2 && s[i] == '='; i-- {
		pad++
	}
	for i := range len(s) - pad {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/') {
			return false
		}
	}
	return true
}

// checkText refuses text that JSON cannot carry as given: invalid UTF-8,
// which encoding/json would silently replace.
func checkText(what, s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("types: %s is not valid UTF-8", what)
	}
	return nil
}

// readLocal reads a local file of at most limit bytes.
func readLocal(what, path string, limit int64) ([]byte, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("types: %s: %w", what, err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("types: %s: %s is not a regular file", what, path)
	}
	if info.Size() > limit {
		return nil, fmt.Errorf("%w: %s has %d bytes, over the %d-byte limit", ErrTooLarge, path, info.Size(), limit)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("types: %s: %w", what, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("types: %s: %w", what, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%w: %s grew over the %d-byte limit while read", ErrTooLarge, path, limit)
	}
	return data, nil
}

// DownloadOptions bound DownloadImage, DownloadAudio and DownloadFile.
//
// Their errors, and those of the constructors refusing a URL (NewImage,
// NewAudio, NewFile), show the URL without what may be a secret: the
// userinfo is REDACTED entirely (user name and password), and so is every
// query value (the keys stay: "?token=REDACTED&size=REDACTED") and the
// fragment; the URL that Go's HTTP client reports (after a redirect, the
// one it was sent to) is redacted the same way. The path stays.
type DownloadOptions struct {
	MaxBytes int64         // default MaxImageBytes for images, MaxMediaBytes otherwise
	Timeout  time.Duration // default 30 s
	// AllowPrivate allows addresses that are not public: loopback,
	// private, link-local, shared (CGNAT), multicast, reserved and
	// documentation ranges, NAT64 addresses of those, … (every IANA
	// special-purpose range; see PublicAddress).
	AllowPrivate bool
	// Client replaces the built-in client, and with it the address check,
	// which lives in the built-in client's dialer (it sees the address
	// actually connected to, on every redirect). It is therefore accepted
	// only together with AllowPrivate, so that the check is never switched
	// off silently: a client of your own decides what it may reach (see
	// PublicAddress for the check).
	Client *http.Client
}

// download is what the Download functions share: it fetches an http(s)
// URL within opt's bounds (scheme, address check, size, timeout; the
// connection closed when it ends) and returns the body with its declared
// media type (normalized, "" when absent or malformed).
func download(ctx context.Context, rawURL string, opt DownloadOptions, limit int64) ([]byte, string, error) {
	shown := showURL(rawURL)
	if ctx == nil {
		return nil, "", fmt.Errorf("types: download %q: nil context", shown)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		// url.Parse's error repeats the URL, or the part that is wrong
		// (a password, as a bad port): it is not kept.
		return nil, "", fmt.Errorf("types: download %q: not a valid URL", shown)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, "", fmt.Errorf("types: download %q: only http and https URLs can be downloaded", shown)
	}
	if opt.MaxBytes <= 0 {
		opt.MaxBytes = limit
	}
	if opt.Timeout <= 0 {
		opt.Timeout = 30 * time.Second
	}
	client := opt.Client
	if client != nil && !opt.AllowPrivate {
		return nil, "", ErrUncheckedClient
	}
	if client == nil {
		dialer := &net.Dialer{Timeout: opt.Timeout}
		if !opt.AllowPrivate {
			dialer.Control = refusePrivate
		}
		tr := &http.Transport{DialContext: dialer.DialContext, DisableKeepAlives: true}
		defer tr.CloseIdleConnections()
		client = &http.Client{Transport: tr}
	}
	ctx, cancel := context.WithTimeout(ctx, opt.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, "", fmt.Errorf("types: download %q: %w", shown, redactURLError(err))
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, "", fmt.Errorf("types: download %q: %w", shown, redactURLError(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, "", fmt.Errorf("types: download %q: HTTP %d", shown, resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, opt.MaxBytes+1))
	if err != nil {
		return nil, "", fmt.Errorf("types: download %q: %w", shown, redactURLError(err))
	}
	if int64(len(data)) > opt.MaxBytes {
		return nil, "", fmt.Errorf("types: download %q: larger than %d bytes", shown, opt.MaxBytes)
	}
	return data, mediaType(resp.Header.Get("Content-Type")), nil
}

// showURL is how an error shows a URL: clipped, with its secrets
// redacted (internal/redact's rule: userinfo, query values, fragment).
func showURL(s string) string { return clip(redact.URL(s)) }

// redactURLError redacts the URL of the *url.Error inside err (Go's HTTP
// client reports the URL it requested, query values and user name
// included, and after a redirect the URL it was sent to).
func redactURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = redact.URL(ue.URL)
	}
	return err
}

// downloadName is the name DownloadFile gives a file whose URL names
// none that is safe (see fileName).
const downloadName = "download"

// maxFileName is the longest name fileName takes, in bytes (NAME_MAX on
// most file systems).
const maxFileName = 255

// fileName is the name a downloaded file is given: the URL's last path
// element, decoded ("report.pdf"), when it is a safe base name, else
// downloadName. A safe base name is valid UTF-8, at most maxFileName
// bytes, not blank, not "." or "..", and holds no path separator ('/' or
// '\\'), control character (C0, DEL, C1), format character (Unicode Cf:
// bidirectional overrides, zero-width characters, BOM) or line or
// paragraph separator: nothing that walks out of a directory, reorders how
// the name reads or starts a new line in a prompt or a log.
func fileName(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return downloadName
	}
	name := u.Path[strings.LastIndexByte(u.Path, '/')+1:]
	if !safeFileName(name) {
		return downloadName
	}
	return name
}

// safeFileName reports a safe base name (see fileName).
func safeFileName(name string) bool {
	if name == "." || name == ".." || len(name) > maxFileName || strings.TrimSpace(name) == "" || !utf8.ValidString(name) {
		return false
	}
	for _, r := range name {
		if r == '/' || r == '\\' || unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp) {
			return false
		}
	}
	return true
}

// refusePrivate is the built-in dialer's check, run on the address
// actually being connected to (after DNS, on every redirect).
func refusePrivate(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !PublicAddress(ap.Addr()) {
		host, _, _ := net.SplitHostPort(address)
		return fmt.Errorf("%w: %s", ErrForbiddenAddress, host)
	}
	return nil
}

// PublicAddress reports whether a download (DownloadImage, DownloadAudio,
// DownloadFile) may connect to addr without AllowPrivate: a unicast
// address outside every IANA special-purpose range (loopback, private,
// link-local, shared 100.64.0.0/10, benchmarking, documentation,
// 192.0.0.0/24, multicast, reserved, IPv6 unique-local, 6to4, Teredo,
// discard, …), and not Azure's host address 168.63.129.16. IPv4-mapped
// IPv6 addresses are judged as IPv4, and NAT64 addresses (64:ff9b::/96) by
// the IPv4 address they embed; the local-use NAT64 prefix 64:ff9b:1::/48
// is refused. Use it in the dialer of a client of your own.
func PublicAddress(addr netip.Addr) bool {
	addr = addr.WithZone("").Unmap()
	if !addr.IsValid() {
		return false
	}
	if addr.Is4() {
		for _, p := range refusedV4 {
			if p.Contains(addr) {
				return false
			}
		}
		return true
	}
	if nat64.Contains(addr) {
		b := addr.As16()
		return PublicAddress(netip.AddrFrom4([4]byte(b[12:])))
	}
	if !globalV6.Contains(addr) {
		return false // loopback, unspecified, unique-local, link-local, multicast, NAT64 local-use, …
	}
	for _, p := range refusedV6 {
		if p.Contains(addr) {
			return false
		}
	}
	return true
}

var (
	// refusedV4: IANA's IPv4 special-purpose registry, multicast and
	// reserved space, and Azure's host address.
	refusedV4 = prefixes("0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
		"192.0.0.0/24", "192.0.2.0/24", "192.31.196.0/24", "192.52.193.0/24", "192.88.99.0/24", "192.168.0.0/16",
		"192.175.48.0/24", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
		"168.63.129.16/32")
	nat64    = netip.MustParsePrefix("64:ff9b::/96")
	globalV6 = netip.MustParsePrefix("2000::/3")
	// refusedV6: IANA's IPv6 special-purpose ranges inside 2000::/3:
	// protocol assignments (Teredo, ORCHID, …), documentation, 6to4,
	// AS112.
	refusedV6 = prefixes("2001::/23", "2001:db8::/32", "2002::/16", "2620:4f:8000::/48", "3fff::/20")
)

func prefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}
