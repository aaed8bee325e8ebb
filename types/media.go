package types

import (
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
	"path/filepath"
	"strings"
	"syscall"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Image is DSPy's dspy.Image: an image given to the model by URL (http,
// https, gs) or inline as a data URI. In a user message it becomes an
// image_url content part, exactly where DSPy places it.
type Image struct {
	URL    string
	Detail openai.ImageURLDetail // "", "low", "high" or "auto"
}

// MaxImageBytes is the largest image NewImage, ImageFromBytes and
// ImageFromFile accept inline (in a data URI), and DownloadImage's default
// limit: 20 MiB of image data, what model providers accept.
const MaxImageBytes = 20 << 20

// ErrNotImage is returned for data that is not an image (by its declared
// or detected media type), and for an inline image over MaxImageBytes.
var ErrNotImage = errors.New("types: not an image")

// NewImage accepts an http(s) or gs URL or a data URI of an image of at
// most MaxImageBytes. Local paths are refused: read them with
// ImageFromFile, so that reading the disk is always explicit.
func NewImage(src string) (Image, error) {
	s := strings.TrimSpace(src)
	switch {
	case strings.HasPrefix(s, "data:"):
		if err := checkDataURI(s); err != nil {
			return Image{}, err
		}
		return Image{URL: s}, nil
	case strings.HasPrefix(s, "http://"), strings.HasPrefix(s, "https://"), strings.HasPrefix(s, "gs://"):
		return Image{URL: s}, nil
	}
	return Image{}, fmt.Errorf("types: unrecognized image %q: give an http(s) or gs URL or a data URI; local files must be loaded with ImageFromFile", clip(s))
}

// checkDataURI accepts data:image/<subtype>[;param…][;base64],<data> whose
// data is at most MaxImageBytes.
func checkDataURI(s string) error {
	header, data, ok := strings.Cut(s[len("data:"):], ",")
	if !ok {
		return fmt.Errorf("%w: %q is not a data URI (no comma)", ErrNotImage, clip(s))
	}
	media, params, _ := strings.Cut(header, ";")
	if imageMIME(media) == "" {
		return fmt.Errorf("%w: a data URI of %q", ErrNotImage, clip(media))
	}
	size := len(data)
	if params == "base64" || strings.HasSuffix(params, ";base64") {
		size = base64.StdEncoding.DecodedLen(len(data))
	}
	if size > MaxImageBytes {
		return fmt.Errorf("%w: a data URI of %d bytes, over the %d-byte limit", ErrNotImage, size, MaxImageBytes)
	}
	return nil
}

// imageMIME returns the media type of an image, lower-cased, without
// parameters or spaces ("image/png"); "" for anything else.
func imageMIME(s string) string {
	if i := strings.IndexByte(s, ';'); i >= 0 {
		s = s[:i]
	}
	s = strings.ToLower(strings.TrimSpace(s))
	sub, ok := strings.CutPrefix(s, "image/")
	if !ok || sub == "" {
		return ""
	}
	for _, c := range sub {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.ContainsRune("!#$&-^_.+", c)) {
			return ""
		}
	}
	return s
}

// ImageFromBytes encodes data as a data URI. An empty mime is detected
// from the bytes (http.DetectContentType); data that is not an image, or
// over MaxImageBytes, is an ErrNotImage error.
func ImageFromBytes(data []byte, mime string) (Image, error) {
	if len(data) > MaxImageBytes {
		return Image{}, fmt.Errorf("%w: %d bytes, over the %d-byte limit", ErrNotImage, len(data), MaxImageBytes)
	}
	if mime == "" {
		mime = http.DetectContentType(data)
	}
	m := imageMIME(mime)
	if m == "" {
		return Image{}, fmt.Errorf("%w: the data is %s", ErrNotImage, mime)
	}
	return Image{URL: "data:" + m + ";base64," + base64.StdEncoding.EncodeToString(data)}, nil
}

// ImageFromFile reads a local image into a data URI. Its media type comes
// from its bytes, or from its extension for formats the bytes do not give
// away (SVG, HEIC).
func ImageFromFile(path string) (Image, error) {
	info, err := os.Stat(path)
	if err != nil {
		return Image{}, fmt.Errorf("types: image: %w", err)
	}
	if info.Size() > MaxImageBytes {
		return Image{}, fmt.Errorf("%w: %s has %d bytes, over the %d-byte limit", ErrNotImage, path, info.Size(), MaxImageBytes)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Image{}, fmt.Errorf("types: image: %w", err)
	}
	m := imageMIME(http.DetectContentType(data))
	if m == "" {
		m = imageMIME(mime.TypeByExtension(filepath.Ext(path)))
	}
	if m == "" {
		return Image{}, fmt.Errorf("%w: %s", ErrNotImage, path)
	}
	return ImageFromBytes(data, m)
}

// DownloadOptions bound DownloadImage.
type DownloadOptions struct {
	MaxBytes int64         // default MaxImageBytes
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

// ErrForbiddenAddress is returned for a download that would reach an
// address that is not public (see PublicAddress) without AllowPrivate.
var ErrForbiddenAddress = errors.New("types: download to a private address refused")

// ErrUncheckedClient is returned for DownloadOptions with a Client but
// without AllowPrivate: a client of your own bypasses the address check.
var ErrUncheckedClient = errors.New("types: DownloadOptions.Client bypasses the private-address check: set AllowPrivate with it, or leave Client nil")

// DownloadImage fetches an http(s) image into a data URI, so the model
// provider need not fetch it. Other schemes (file://, gs://) are refused,
// as are addresses that are not public unless allowed, bodies over the
// size limit, downloads over the timeout and content that is not an image
// (by its Content-Type, else by its bytes). The connection is closed when
// the download ends.
func DownloadImage(ctx context.Context, rawURL string, opt DownloadOptions) (Image, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return Image{}, fmt.Errorf("types: download %q: only http and https URLs can be downloaded", clip(rawURL))
	}
	if opt.MaxBytes <= 0 {
		opt.MaxBytes = MaxImageBytes
	}
	if opt.Timeout <= 0 {
		opt.Timeout = 30 * time.Second
	}
	client := opt.Client
	if client != nil && !opt.AllowPrivate {
		return Image{}, ErrUncheckedClient
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
		return Image{}, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return Image{}, fmt.Errorf("types: download %q: %w", clip(rawURL), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Image{}, fmt.Errorf("types: download %q: HTTP %d", clip(rawURL), resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, opt.MaxBytes+1))
	if err != nil {
		return Image{}, fmt.Errorf("types: download %q: %w", clip(rawURL), err)
	}
	if int64(len(data)) > opt.MaxBytes {
		return Image{}, fmt.Errorf("types: download %q: larger than %d bytes", clip(rawURL), opt.MaxBytes)
	}
	m := imageMIME(resp.Header.Get("Content-Type"))
	if m == "" {
		m = imageMIME(http.DetectContentType(data))
	}
	if m == "" {
		return Image{}, fmt.Errorf("types: download %q: %w (Content-Type %q)", clip(rawURL), ErrNotImage, resp.Header.Get("Content-Type"))
	}
	return Image{URL: "data:" + m + ";base64," + base64.StdEncoding.EncodeToString(data)}, nil
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

// PublicAddress reports whether DownloadImage may connect to addr without
// AllowPrivate: a unicast address outside every IANA special-purpose range
// (loopback, private, link-local, shared 100.64.0.0/10, benchmarking,
// documentation, 192.0.0.0/24, multicast, reserved, IPv6 unique-local,
// 6to4, Teredo, discard, …), and not Azure's host address 168.63.129.16.
// IPv4-mapped IPv6 addresses are judged as IPv4, and NAT64 addresses
// (64:ff9b::/96) by the IPv4 address they embed; the local-use NAT64
// prefix 64:ff9b:1::/48 is refused. Use it in the dialer of a client of
// your own.
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

// FormatParts returns the image_url part. An Image built as a struct
// literal is held to NewImage's rules: a URL NewImage refuses (a local
// path, file://, an oversized or non-image data URI) is an error, never a
// part.
func (i Image) FormatParts() ([]openai.ChatMessagePart, error) {
	if i.URL == "" {
		return nil, errors.New("types: empty Image")
	}
	if _, err := NewImage(i.URL); err != nil {
		return nil, err
	}
	return []openai.ChatMessagePart{{Type: openai.ChatMessagePartTypeImageURL, ImageURL: &openai.ChatMessageImageURL{URL: i.URL, Detail: i.Detail}}}, nil
}

// String is DSPy's repr: Image(url='…'), a data URI abbreviated.
func (i Image) String() string {
	if strings.HasPrefix(i.URL, "data:") {
		if j := strings.Index(i.URL, "base64,"); j >= 0 {
			return fmt.Sprintf("Image(url=%s<IMAGE_BASE_64_ENCODED(%d)>)", i.URL[:j+len("base64,")], len(i.URL)-j-len("base64,"))
		}
	}
	return "Image(url='" + i.URL + "')"
}

// MarshalJSON writes {"url": …} (and "detail" when set).
func (i Image) MarshalJSON() ([]byte, error) {
	m := map[string]string{"url": i.URL}
	if i.Detail != "" {
		m["detail"] = string(i.Detail)
	}
	return json.Marshal(m)
}

// UnmarshalJSON accepts a URL or data URI string, or {"url": …}.
func (i *Image) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		img, err := NewImage(s)
		*i = img
		return err
	}
	var m struct {
		URL    string                `json:"url"`
		Detail openai.ImageURLDetail `json:"detail"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("types: Image: %w", err)
	}
	img, err := NewImage(m.URL)
	img.Detail = m.Detail
	*i = img
	return err
}

// ParseField reads an image URL or data URI from a field's text.
func (i *Image) ParseField(raw string) error {
	img, err := NewImage(raw)
	*i = img
	return err
}

// Audio is DSPy's dspy.Audio: base64 data and its format ("wav", "mp3").
// go-openai's message parts cannot carry input_audio, so formatting an
// Audio value fails with ErrUnsupportedPart.
type Audio struct {
	Data   string `json:"data"`
	Format string `json:"audio_format"`
}

// File is DSPy's dspy.File: a data URI, an uploaded file id, a filename.
// go-openai's message parts cannot carry files, so formatting a File value
// fails with ErrUnsupportedPart.
type File struct {
	FileData string `json:"file_data,omitempty"`
	FileID   string `json:"file_id,omitempty"`
	Filename string `json:"filename,omitempty"`
}

// ErrUnsupportedPart: the client library cannot send this kind of content
// part (go-openai sends text and image_url parts only).
var ErrUnsupportedPart = errors.New("types: go-openai cannot send this content part (only text and image_url)")

// FormatParts fails: see ErrUnsupportedPart.
func (Audio) FormatParts() ([]openai.ChatMessagePart, error) {
	return nil, fmt.Errorf("%w: input_audio", ErrUnsupportedPart)
}

// FormatParts fails: see ErrUnsupportedPart.
func (File) FormatParts() ([]openai.ChatMessagePart, error) {
	return nil, fmt.Errorf("%w: file", ErrUnsupportedPart)
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

// Document is DSPy's experimental dspy.experimental.Document: text (or a
// PDF) the model may cite. go-openai's message parts cannot carry
// documents, so formatting a Document value fails with ErrUnsupportedPart.
type Document struct {
	Data      string `json:"data"`
	Title     string `json:"title,omitempty"`
	MediaType string `json:"media_type,omitempty"` // "text/plain" (default) or "application/pdf"
	Context   string `json:"context,omitempty"`
}

// TypeDescription is DSPy's Document.description().
func (Document) TypeDescription() string {
	return "A document containing text content that can be referenced and cited. Include the full text content and optionally a title for proper referencing."
}

// FormatParts fails: see ErrUnsupportedPart.
func (Document) FormatParts() ([]openai.ChatMessagePart, error) {
	return nil, fmt.Errorf("%w: document", ErrUnsupportedPart)
}
