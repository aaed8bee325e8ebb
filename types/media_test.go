package types_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/types"
)

var pngBytes = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")

// openFDs counts the process's open file descriptors (Linux), -1 elsewhere.
func openFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

// settle waits until the goroutine count stops falling.
func settle() int {
	n := runtime.NumGoroutine()
	for range 50 {
		time.Sleep(10 * time.Millisecond)
		m := runtime.NumGoroutine()
		if m == n {
			return m
		}
		n = m
	}
	return n
}

// TestDownloadImageLeaksNothing: each download used to leave a kept-alive
// connection, its file descriptor and two goroutines behind (security
// review #6).
func TestDownloadImageLeaksNothing(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(pngBytes)
	}))
	defer srv.Close()
	const n = 100
	g0, fd0 := settle(), openFDs()
	for range n {
		_, err := types.DownloadImage(context.Background(), srv.URL+"/x.png", types.DownloadOptions{AllowPrivate: true})
		require.NoError(t, err)
	}
	g1, fd1 := settle(), openFDs()
	t.Logf("after %d downloads: goroutines %d -> %d, open fds %d -> %d", n, g0, g1, fd0, fd1)
	assert.Less(t, g1-g0, 5, "goroutines left behind")
	if fd0 >= 0 {
		assert.Less(t, fd1-fd0, 5, "file descriptors left behind")
	}
}

// TestDownloadImageContent: only image content is kept, as a well-formed
// data URI (security review #16: an HTML page became
// "data:text/html; charset=utf-8;base64,…").
func TestDownloadImageContent(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/page":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write([]byte("<html><body>hi</body></html>"))
		case "/untyped":
			w.Header().Set("Content-Type", "application/octet-stream")
			_, _ = w.Write(pngBytes)
		case "/odd":
			w.Header().Set("Content-Type", " IMAGE/PNG ; charset=x")
			_, _ = w.Write(pngBytes)
		}
	}))
	defer srv.Close()
	opt := types.DownloadOptions{AllowPrivate: true}
	_, err := types.DownloadImage(context.Background(), srv.URL+"/page", opt)
	assert.ErrorIs(t, err, types.ErrNotImage)
	img, err := types.DownloadImage(context.Background(), srv.URL+"/untyped", opt)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(img.URL, "data:image/png;base64,"), img.URL)
	img, err = types.DownloadImage(context.Background(), srv.URL+"/odd", opt)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(img.URL, "data:image/png;base64,"), img.URL)
	_, err = types.NewImage(img.URL)
	assert.NoError(t, err, "the result is a valid Image")
}

// TestDownloadImageOwnClient: a client of the caller's own bypasses the
// address check, so it needs AllowPrivate (security review #9).
func TestDownloadImageOwnClient(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(pngBytes)
	}))
	defer srv.Close()
	client := &http.Client{Timeout: 5 * time.Second}
	_, err := types.DownloadImage(context.Background(), srv.URL, types.DownloadOptions{Client: client})
	assert.ErrorIs(t, err, types.ErrUncheckedClient)
	_, err = types.DownloadImage(context.Background(), srv.URL, types.DownloadOptions{Client: client, AllowPrivate: true})
	assert.NoError(t, err)
	client.CloseIdleConnections()
}

// TestDownloadNilContext: a nil context is an error for every download,
// never a panic.
func TestDownloadNilContext(t *testing.T) {
	var ctx context.Context
	_, err := types.DownloadImage(ctx, "https://example.com/a.png", types.DownloadOptions{})
	assert.ErrorContains(t, err, "nil context")
	_, err = types.DownloadAudio(ctx, "https://example.com/a.wav", types.DownloadOptions{})
	assert.ErrorContains(t, err, "nil context")
	_, err = types.DownloadFile(ctx, "https://example.com/a.pdf", types.DownloadOptions{})
	assert.ErrorContains(t, err, "nil context")
}

// TestDownloadImageRefusesSpecialRanges: the dialer refuses, before any
// connection, every address that is not public (security review #8: the
// download reached 100.100.100.200, Alibaba Cloud's metadata service).
func TestDownloadImageRefusesSpecialRanges(t *testing.T) {
	for _, u := range []string{
		"http://100.100.100.200:9/x.png", "http://198.18.0.1:9/x.png", "http://192.0.0.170:9/x.png",
		"http://240.0.0.1:9/x.png", "http://0.1.2.3:9/x.png", "http://168.63.129.16:9/x.png",
		"http://[::ffff:100.100.100.200]:9/x.png", // IPv6 ranges: TestPublicAddress (a host may lack IPv6 sockets)
	} {
		_, err := types.DownloadImage(context.Background(), u, types.DownloadOptions{Timeout: 2 * time.Second})
		assert.ErrorIs(t, err, types.ErrForbiddenAddress, u)
	}
}

func TestPublicAddress(t *testing.T) {
	for _, s := range []string{"8.8.8.8", "1.1.1.1", "100.63.255.255", "100.128.0.0", "198.20.0.1", "2606:4700:4700::1111", "2a00:1450:4001::200e", "64:ff9b::808:808", "::ffff:8.8.8.8"} {
		assert.True(t, types.PublicAddress(netip.MustParseAddr(s)), s)
	}
	for _, s := range []string{
		"0.0.0.0", "0.1.2.3", "10.1.2.3", "100.64.0.1", "100.100.100.200", "127.0.0.1", "127.255.0.1", "169.254.169.254", "172.16.0.1", "172.31.255.255",
		"192.0.0.170", "192.0.2.1", "192.88.99.1", "192.168.1.1", "198.18.0.1", "198.19.255.255", "198.51.100.7", "203.0.113.9", "224.0.0.1", "239.255.255.250",
		"240.0.0.1", "255.255.255.255", "168.63.129.16",
		"::", "::1", "::ffff:127.0.0.1", "::ffff:169.254.169.254", "::7f00:1", "64:ff9b::7f00:1", "64:ff9b::a00:1", "64:ff9b:1::a00:1", "100::1",
		"2001::1", "2001:db8::1", "2002:7f00:1::1", "2620:4f:8000::1", "3fff::1", "fc00::1", "fd00:ec2::254", "fe80::1", "fe80::1%eth0", "fec0::1", "ff02::1",
	} {
		assert.False(t, types.PublicAddress(netip.MustParseAddr(s)), s)
	}
	assert.False(t, types.PublicAddress(netip.Addr{}))
}

// TestInlineImageLimits: data URIs, bytes and files are bounded like
// downloads and must be images (security review #16).
func TestInlineImageLimits(t *testing.T) {
	big := make([]byte, types.MaxImageBytes+1)
	copy(big, pngBytes)
	_, err := types.ImageFromBytes(big, "image/png")
	assert.ErrorIs(t, err, types.ErrNotImage)
	_, err = types.NewImage("data:image/png;base64," + base64.StdEncoding.EncodeToString(big))
	assert.ErrorIs(t, err, types.ErrNotImage)
	_, err = types.ImageFromBytes([]byte("<html>hi</html>"), "")
	assert.ErrorIs(t, err, types.ErrNotImage)
	for _, bad := range []string{"data:text/html;base64,PGh0bWw+", "data:image/png;base64", "data:image/;base64,AAAA", "data:image/p ng;base64,AAAA"} {
		_, err = types.NewImage(bad)
		assert.ErrorIs(t, err, types.ErrNotImage, bad)
	}
	for _, good := range []string{"data:image/png;base64,iVBORw0KGgo=", "data:image/svg+xml,%3Csvg%2F%3E", "data:image/svg+xml;charset=utf-8;base64,PHN2Zy8+"} {
		_, err = types.NewImage(good)
		assert.NoError(t, err, good)
	}

	dir := t.TempDir()
	svg := filepath.Join(dir, "a.svg")
	require.NoError(t, os.WriteFile(svg, []byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`), 0o600))
	img, err := types.ImageFromFile(svg)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(img.URL, "data:image/svg+xml;base64,"), img.URL)
	txt := filepath.Join(dir, "a.txt")
	require.NoError(t, os.WriteFile(txt, []byte("hello"), 0o600))
	_, err = types.ImageFromFile(txt)
	assert.ErrorIs(t, err, types.ErrNotImage)
	large := filepath.Join(dir, "large.png")
	require.NoError(t, os.WriteFile(large, big, 0o600))
	_, err = types.ImageFromFile(large)
	assert.ErrorIs(t, err, types.ErrNotImage)
}

// TestImageLiteralChecked: an Image built as a struct literal is held to
// NewImage's rules when it becomes a part (security review #17).
func TestImageLiteralChecked(t *testing.T) {
	sig := parse(t, "photo: Image -> caption")
	for _, u := range []string{"file:///etc/passwd", "/etc/passwd", "data:text/html;base64,PGh0bWw+"} {
		_, err := adapter.Chat{}.Format(sig, nil, adapter.Values{"photo": types.Image{URL: u}})
		assert.ErrorContains(t, err, `"photo"`, u)
	}
}

// TestNewImageChecksDataAndHost: an image data URI's base64 is checked as
// an audio clip's or a file's is (providers refuse what does not decode,
// after the whole request was sent), and a URL must name a host: "https://"
// alone is no image.
func TestNewImageChecksDataAndHost(t *testing.T) {
	sig := parse(t, "photo: Image -> caption")
	for _, bad := range []string{
		"data:image/png;base64,!!!notbase64",
		"data:image/png;base64,iVBORw0KGgo",   // a length that is no multiple of four
		"data:image/png;base64,iVBO=w0KGgo=",  // padding inside
		"data:image/png;base64,iVBORw0K Ggo=", // a blank inside
		"data:image/png;base64,",              // nothing
		"https://", "http://", "gs://", "https:///cat.png", "https://?q=1", "https://:443/cat.png", "https://user@/cat.png",
		"https://exa mple.com/cat.png", "gs:///cat.png",
	} {
		_, err := types.NewImage(bad)
		assert.Error(t, err, bad)
		var img types.Image
		assert.Error(t, img.ParseField(bad), bad)
		assert.Error(t, img.UnmarshalJSON([]byte(`{"url": "`+bad+`"}`)), bad)
		_, err = adapter.Chat{}.Format(sig, nil, adapter.Values{"photo": types.Image{URL: bad}})
		assert.ErrorContains(t, err, `"photo"`, bad)
	}
	for _, bad := range []string{"data:image/png;base64,!!!notbase64", "data:image/png;base64,iVBORw0KGgo"} {
		_, err := types.NewImage(bad)
		assert.ErrorIs(t, err, types.ErrNotImage, bad)
	}
	for _, good := range []string{
		"data:image/png;base64,iVBORw0KGgo=", "data:image/svg+xml,%3Csvg%2F%3E",
		"https://example.com", "https://example.com:8443/a.png?x=1", "http://[::1]:8080/a.png", "gs://bucket/a.png",
	} {
		_, err := types.NewImage(good)
		assert.NoError(t, err, good)
	}
}
