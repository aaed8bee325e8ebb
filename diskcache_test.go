package adapter_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/signature"
)

// diskEntry is an entry whose reply names key, so that a hit can be
// checked against the key asked for.
func diskEntry(key string) adapter.CacheEntry {
	return adapter.CacheEntry{Response: openai.ChatCompletionResponse{
		ID: "chatcmpl-" + key, Model: "m",
		Choices: []openai.ChatCompletionChoice{{FinishReason: openai.FinishReasonStop,
			Message: openai.ChatCompletionMessage{Role: "assistant", Content: "[[ ## a ## ]]\nanswer for " + key}}},
		Usage: openai.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15},
	}}
}

func openDisk(t testing.TB, dir string, opts ...adapter.DiskCacheOption) *adapter.DiskCache {
	t.Helper()
	c, err := adapter.OpenDiskCache(dir, opts...)
	require.NoError(t, err)
	return c
}

// diskFiles lists the entry files under dir (temporary files left out).
func diskFiles(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() && !strings.HasPrefix(d.Name(), ".tmp-") {
			out = append(out, p)
		}
		return nil
	}))
	return out
}

// TestDiskCacheSurvivesRestart: a reply cached by one DiskCache is served,
// through Call, by another opened later on the same directory (a restart),
// without an LM call.
func TestDiskCacheSurvivesRestart(t *testing.T) {
	sig := mustParse(t, "q -> a")
	srv := lmtest.NewServer(lmtest.Text("[[ ## a ## ]]\nforty-two"))
	defer srv.Close()
	dir := t.TempDir()
	call := func() *adapter.Result {
		lm := adapter.WithMiddleware(srv.Client(), adapter.Cached(openDisk(t, dir)))
		res, err := adapter.Call(t.Context(), lm, sig, nil, adapter.Values{"q": "x"})
		require.NoError(t, err)
		return res
	}
	first := call()
	assert.Zero(t, first.CacheHits)
	second := call()
	assert.Equal(t, 1, second.CacheHits)
	assert.Equal(t, "forty-two", second.Outputs[0]["a"])
	assert.Zero(t, second.Usage.TotalTokens, "a hit spends no tokens")
	assert.Len(t, srv.Requests(), 1)
}

// TestDiskCacheRoundTrip: whatever entry is put comes back equal, extras
// included, and each key gets its own entry.
func TestDiskCacheRoundTrip(t *testing.T) {
	c := openDisk(t, t.TempDir())
	r := rand.New(rand.NewPCG(1, 2))
	want := map[string]adapter.CacheEntry{}
	for i := range 200 {
		key := fmt.Sprintf("%x", r.Uint64())
		if i%7 == 0 {
			key = strings.Repeat("k\n", i) // keys are opaque: newlines, any length
		}
		e := diskEntry(key)
		e.Response.Choices[0].Message.Content += strings.Repeat("é\x00\"", r.IntN(50))
		e.Extras = adapter.WireExtras{Choices: []adapter.ChoiceExtras{{Index: 0}}}
		want[key] = e
		c.Put(t.Context(), key, e)
	}
	for key, e := range want {
		got, ok := c.Get(t.Context(), key)
		require.True(t, ok, "key %q", key)
		assert.Equal(t, e, got)
	}
	_, ok := c.Get(t.Context(), "absent")
	assert.False(t, ok)
	st := c.Stats()
	assert.Equal(t, int64(200), st.Hits)
	assert.Equal(t, int64(1), st.Misses)
	assert.Zero(t, st.Corrupt+st.Errors)
}

// TestDiskCacheCorruptIgnored: a file cut short, garbage, another key's
// entry in this key's place, or bad JSON is a miss, counted, never a
// wrong reply; the call goes to the LM and the next Put repairs the file.
func TestDiskCacheCorruptIgnored(t *testing.T) {
	sig := mustParse(t, "q -> a")
	dir := t.TempDir()
	srv := lmtest.NewServer()
	defer srv.Close()
	srv.Handle(func(r lmtest.Request) lmtest.Reply { return lmtest.Text("[[ ## a ## ]]\nfrom the LM") })

	// Learn which file holds which call's entry.
	c := openDisk(t, dir)
	lm := adapter.WithMiddleware(srv.Client(), adapter.Cached(c))
	_, err := adapter.Call(t.Context(), lm, sig, nil, adapter.Values{"q": "x"})
	require.NoError(t, err)
	files := diskFiles(t, dir)
	require.Len(t, files, 1)
	good, err := os.ReadFile(files[0])
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(good), "sigwire-cache v1 "), "the header names the format")

	foreign := strings.Replace(string(good), "from the LM", "from another key", 1)
	keyStart := strings.IndexByte(foreign, '\n') + 1
	other := "0"
	if foreign[keyStart] == '0' {
		other = "1"
	}
	foreign = foreign[:keyStart] + other + foreign[keyStart+1:] // same length, another key
	for name, content := range map[string]string{
		"cut":         string(good[:len(good)-10]),
		"garbage":     "\x00\x01not a cache file",
		"empty":       "",
		"foreign key": foreign,
		"bad json":    string(good[:strings.Index(string(good), "{")]) + "{\"response\": 42}",
		"no choices":  string(good[:strings.Index(string(good), "{")]) + `{"response":{"choices":[]}}`,
		"old version": strings.Replace(string(good), "sigwire-cache v1", "sigwire-cache v0", 1),
		// A key length near math.MaxInt: n+1 wrapped, and the check
		// indexed past the end (security review 4, P1).
		"key length overflow": "sigwire-cache v1 9223372036854775807\nx",
	} {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, os.WriteFile(files[0], []byte(content), 0o600))
			before := c.Stats().Corrupt
			n := len(srv.Requests())
			res, err := adapter.Call(t.Context(), lm, sig, nil, adapter.Values{"q": "x"})
			require.NoError(t, err)
			assert.Equal(t, "from the LM", res.Outputs[0]["a"])
			assert.Zero(t, res.CacheHits)
			assert.Len(t, srv.Requests(), n+1, "the call went to the LM")
			assert.Equal(t, before+1, c.Stats().Corrupt, "and the file was counted")
			res, err = adapter.Call(t.Context(), lm, sig, nil, adapter.Values{"q": "x"})
			require.NoError(t, err)
			assert.Equal(t, 1, res.CacheHits, "the LM's reply replaced the file")
			assert.Equal(t, "from the LM", res.Outputs[0]["a"])
		})
	}
}

// TestDiskCacheEvictsLeastRecentlyUsed: past MaxEntries, a Put removes the
// least recently used files, and a hit counts as a use.
func TestDiskCacheEvictsLeastRecentlyUsed(t *testing.T) {
	dir := t.TempDir()
	c := openDisk(t, dir, adapter.WithDiskCacheMaxEntries(10))
	ctx := t.Context()
	for i := range 10 {
		c.Put(ctx, strconv.Itoa(i), diskEntry(strconv.Itoa(i)))
	}
	// Age the entries: 0 the oldest, 9 the newest, all over a minute old.
	base := time.Now().Add(-time.Hour)
	for i := range 10 {
		_, ok := c.Get(ctx, strconv.Itoa(i)) // a hit on a fresh file does not touch it
		require.True(t, ok)
	}
	for _, f := range diskFiles(t, dir) {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		i, err := strconv.Atoi(strings.SplitN(string(b), "\n", 3)[1])
		require.NoError(t, err)
		mod := base.Add(time.Duration(i) * time.Minute)
		require.NoError(t, os.Chtimes(f, mod, mod))
	}
	_, ok := c.Get(ctx, "0") // 0 is used again: now the newest
	require.True(t, ok)

	c.Put(ctx, "10", diskEntry("10")) // 11 entries: evict down to 9
	var kept []string
	for i := range 11 {
		if _, ok := c.Get(ctx, strconv.Itoa(i)); ok {
			kept = append(kept, strconv.Itoa(i))
		}
	}
	assert.Equal(t, []string{"0", "3", "4", "5", "6", "7", "8", "9", "10"}, kept)
	assert.Equal(t, int64(2), c.Stats().Evicted)
	assert.Len(t, diskFiles(t, dir), 9)
}

// TestDiskCacheMaxBytes: the files stay within MaxBytes, and an entry
// larger than the bound alone is not stored.
func TestDiskCacheMaxBytes(t *testing.T) {
	dir := t.TempDir()
	const bound = 20_000
	c := openDisk(t, dir, adapter.WithDiskCacheMaxBytes(bound))
	for i := range 200 {
		c.Put(t.Context(), strconv.Itoa(i), diskEntry(strconv.Itoa(i)))
	}
	var total int64
	for _, f := range diskFiles(t, dir) {
		fi, err := os.Stat(f)
		require.NoError(t, err)
		total += fi.Size()
	}
	assert.LessOrEqual(t, total, int64(bound))
	assert.Positive(t, c.Stats().Evicted)
	_, ok := c.Get(t.Context(), "199")
	assert.True(t, ok, "the newest entry is kept")

	big := diskEntry("big")
	big.Response.Choices[0].Message.Content = strings.Repeat("x", bound)
	c.Put(t.Context(), "big", big)
	_, ok = c.Get(t.Context(), "big")
	assert.False(t, ok)
	assert.Equal(t, int64(1), c.Stats().Oversize)

	// Reopened with a smaller bound, the directory is trimmed at once.
	small := openDisk(t, dir, adapter.WithDiskCacheMaxEntries(3))
	assert.Len(t, diskFiles(t, dir), 3)
	assert.Equal(t, 3, small.Stats().Entries)
}

// TestOpenDiskCacheErrors: an unusable directory is an error at open, not
// a cache that silently never hits.
func TestOpenDiskCacheErrors(t *testing.T) {
	_, err := adapter.OpenDiskCache("")
	assert.Error(t, err)
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	_, err = adapter.OpenDiskCache(file)
	assert.Error(t, err)
}

// diskWorkload is what each process of TestDiskCacheProcesses does: it
// puts and gets shared keys and keys of its own, with a bound small
// enough that both evict while the other reads and writes, and checks
// that every hit answers the key asked for.
func diskWorkload(dir, me string) (adapter.DiskCacheStats, int, error) {
	c, err := adapter.OpenDiskCache(dir, adapter.WithDiskCacheMaxEntries(60))
	if err != nil {
		return adapter.DiskCacheStats{}, 0, err
	}
	ctx := context.Background()
	wrong := 0
	for i := range 600 {
		key := "shared-" + strconv.Itoa(i%50)
		if i%3 == 0 {
			key = me + "-" + strconv.Itoa(i%70)
		}
		if e, ok := c.Get(ctx, key); ok {
			if e.Response.Choices[0].Message.Content != diskEntry(key).Response.Choices[0].Message.Content {
				wrong++
			}
			continue
		}
		c.Put(ctx, key, diskEntry(key))
	}
	return c.Stats(), wrong, nil
}

type diskWorkloadResult struct {
	Stats adapter.DiskCacheStats
	Wrong int
	Err   string
}

// TestDiskCacheProcesses: two processes (this test binary run again as
// TestDiskCacheProcess) share one directory at once: every hit is the
// entry of its key, no file is corrupt, no temporary file is left, and
// every entry left is whole.
func TestDiskCacheProcesses(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestDiskCacheProcess$")
	cmd.Env = append(os.Environ(), "SIGWIRE_DISKCACHE_DIR="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	st, wrong, err := diskWorkload(dir, "parent")
	require.NoError(t, err)
	var child diskWorkloadResult
	require.NoError(t, json.NewDecoder(out).Decode(&child))
	require.NoError(t, cmd.Wait())
	require.Empty(t, child.Err)

	for name, r := range map[string]diskWorkloadResult{"parent": {Stats: st, Wrong: wrong}, "child": child} {
		t.Logf("%s: %+v", name, r.Stats)
		assert.Zero(t, r.Wrong, "%s: a hit answered another key", name)
		assert.Zero(t, r.Stats.Corrupt, "%s: a reader saw a partial file", name)
		assert.Zero(t, r.Stats.Errors, name)
		assert.Positive(t, r.Stats.Hits, name)
		assert.Positive(t, r.Stats.Evicted, "%s evicted while the other worked", name)
	}
	files := diskFiles(t, dir)
	assert.LessOrEqual(t, len(files), 60+60/10*2, "within the bound and a tenth per process")
	after := openDisk(t, dir)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		key := strings.SplitN(string(b), "\n", 3)[1]
		e, ok := after.Get(t.Context(), key)
		require.True(t, ok, "file %s is whole", f)
		assert.Equal(t, diskEntry(key), e)
	}
	var temps int
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".tmp-") {
			temps++
		}
		return nil
	})
	assert.Zero(t, temps, "no temporary file left behind")
}

// TestDiskCacheProcess is TestDiskCacheProcesses's second process: with
// SIGWIRE_DISKCACHE_DIR set it runs the workload and prints its result as
// JSON.
func TestDiskCacheProcess(t *testing.T) {
	dir := os.Getenv("SIGWIRE_DISKCACHE_DIR")
	if dir == "" {
		t.Skip("run by TestDiskCacheProcesses")
	}
	st, wrong, err := diskWorkload(dir, "child")
	r := diskWorkloadResult{Stats: st, Wrong: wrong}
	if err != nil {
		r.Err = err.Error()
	}
	_ = json.NewEncoder(os.Stdout).Encode(r)
}

// BenchmarkDiskCacheHit is a hit on a 10 000-entry disk cache: open, read
// and check a file, decode the entry.
func BenchmarkDiskCacheHit(b *testing.B) {
	c := openDisk(b, b.TempDir())
	ctx := context.Background()
	const n = 10_000
	for i := range n {
		c.Put(ctx, strconv.Itoa(i), diskEntry(strconv.Itoa(i)))
	}
	r := rand.New(rand.NewPCG(3, 4))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, ok := c.Get(ctx, strconv.Itoa(r.IntN(n))); !ok {
			b.Fatal("miss")
		}
	}
}

// ExampleOpenDiskCache keeps replies on disk between runs of a program: an
// evaluation loop run twice pays for each prompt once.
func ExampleOpenDiskCache() {
	srv := lmtest.NewServer(lmtest.Text("[[ ## answer ## ]]\nParis"))
	defer srv.Close()
	dir, _ := os.MkdirTemp("", "lmcache")
	defer os.RemoveAll(dir)

	sig, err := signature.Parse("question -> answer")
	if err != nil {
		panic(err)
	}
	for run := 1; run <= 2; run++ { // two runs of the program
		cache, err := adapter.OpenDiskCache(dir, adapter.WithDiskCacheMaxBytes(64<<20))
		if err != nil {
			panic(err)
		}
		lm := adapter.WithMiddleware(srv.Client(), adapter.Cached(cache))
		res, err := adapter.Call(context.Background(), lm, sig, nil, adapter.Values{"question": "Capital of France?"})
		if err != nil {
			panic(err)
		}
		fmt.Printf("run %d: %s (cache hits: %d)\n", run, res.Outputs[0]["answer"], res.CacheHits)
	}
	// Output:
	// run 1: Paris (cache hits: 0)
	// run 2: Paris (cache hits: 1)
}

// TestUnmarshalCacheEntryKeyLengths: whatever length a header claims for
// the key — every length near the value's size, near math.MaxInt and past
// it — the bytes are an entry for the key they hold or an error matching
// ErrCorruptCacheEntry, never a panic (security review 4, P1: a length of
// 2^63-1 indexed past the end and crashed every caller of the lookup).
func TestUnmarshalCacheEntryKeyLengths(t *testing.T) {
	good, err := adapter.MarshalCacheEntry("key", diskEntry("key"))
	require.NoError(t, err)
	_, body, _ := strings.Cut(string(good), "\n") // "key\n{…}"
	var lengths []string
	for _, base := range []uint64{0, uint64(len(body)), math.MaxInt64, math.MaxUint64} {
		for d := uint64(0); d < 4; d++ {
			lengths = append(lengths, strconv.FormatUint(base+d, 10), strconv.FormatUint(base-d, 10))
		}
	}
	lengths = append(lengths, "-1", "+3", "3 ", "03", "")
	for _, n := range lengths {
		b := []byte("sigwire-cache v1 " + n + "\n" + body)
		for cut := range 4 { // and shorter values, down to the header alone
			b := b[:max(len(b)-cut*len(body)/3, 0)]
			var e adapter.CacheEntry
			require.NotPanics(t, func() { e, err = adapter.UnmarshalCacheEntry("key", b) }, "length %q", n)
			if err != nil {
				require.ErrorIs(t, err, adapter.ErrCorruptCacheEntry, "length %q", n)
				continue
			}
			assert.Contains(t, []string{"3", "03", "+3"}, n, "only the key's own length reads")
			assert.Equal(t, diskEntry("key").Response.ID, e.Response.ID)
		}
	}
}

// FuzzUnmarshalCacheEntry: bytes from a shared store are untrusted: any
// input is an entry or an error matching ErrCorruptCacheEntry, never a
// panic, and an entry read for a key re-encodes to one that reads back
// the same for that key alone (as JSON: nil and empty lists are one).
func FuzzUnmarshalCacheEntry(f *testing.F) {
	good, err := adapter.MarshalCacheEntry("k", diskEntry("k"))
	require.NoError(f, err)
	f.Add("k", good)
	f.Add("k", good[:len(good)-3])
	f.Add("other", good)
	f.Add("", []byte("sigwire-cache v1 0\n\n{\"response\":{\"choices\":[{}]}}"))
	f.Add("k", []byte("sigwire-cache v1 -1\nk\n{}"))
	f.Add("k", []byte("sigwire-cache v1 99999999999999999999\nk\n{}"))
	f.Add("k", []byte("sigwire-cache v1 9223372036854775807\nk\n{}"))
	f.Fuzz(func(t *testing.T, key string, b []byte) {
		e, err := adapter.UnmarshalCacheEntry(key, b)
		if err != nil {
			require.ErrorIs(t, err, adapter.ErrCorruptCacheEntry)
			return
		}
		again, err := adapter.MarshalCacheEntry(key, e)
		require.NoError(t, err)
		e2, err := adapter.UnmarshalCacheEntry(key, again)
		require.NoError(t, err)
		// The same entry as stored: equal JSON (an empty list and none
		// are the same omitted member, e.g. "extras": {"choices": []}).
		j1, err := json.Marshal(e)
		require.NoError(t, err)
		j2, err := json.Marshal(e2)
		require.NoError(t, err)
		assert.JSONEq(t, string(j1), string(j2))
		_, err = adapter.UnmarshalCacheEntry(key+"x", again)
		require.ErrorIs(t, err, adapter.ErrCorruptCacheEntry)
	})
}

// TestDiskCacheDirectoryRules: OpenDiskCache uses dir/v1 only when it is
// the user's own directory (security review 4, P6): one that others may
// write, that belongs to another user or that is a symbolic link is
// refused, and one that others may only read is made the owner's alone.
// Before, each was used as it was found; through a linked v1, opening the
// cache with a small bound deleted the files of the directory it pointed
// to.
func TestDiskCacheDirectoryRules(t *testing.T) {
	planted := func(t *testing.T, mode os.FileMode) string {
		dir := t.TempDir()
		v1 := filepath.Join(dir, "v1")
		require.NoError(t, os.Mkdir(v1, 0o700))
		require.NoError(t, os.Chmod(v1, mode)) // past the umask
		return dir
	}
	for _, mode := range []os.FileMode{0o777, 0o770, 0o722, 0o702, 0o777 | os.ModeSticky} {
		t.Run(fmt.Sprintf("writable by others %o", mode), func(t *testing.T) {
			_, err := adapter.OpenDiskCache(planted(t, mode))
			require.Error(t, err)
			assert.Contains(t, err.Error(), "writable by others")
		})
	}
	t.Run("readable by others", func(t *testing.T) {
		dir := planted(t, 0o755)
		openDisk(t, dir)
		fi, err := os.Stat(filepath.Join(dir, "v1"))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), "readable by its owner only")
	})
	t.Run("another user's", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("giving a directory to another user needs root")
		}
		dir := planted(t, 0o700)
		require.NoError(t, os.Chown(filepath.Join(dir, "v1"), 65534, 65534))
		_, err := adapter.OpenDiskCache(dir)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "belongs to another user (uid 65534)")
	})
	t.Run("a link", func(t *testing.T) {
		// The review's reproduction: v1 links to a project whose
		// two-letter folders look like shards.
		project := t.TempDir()
		precious := filepath.Join(project, "db", "customers.sqlite")
		require.NoError(t, os.MkdirAll(filepath.Dir(precious), 0o700))
		require.NoError(t, os.WriteFile(precious, make([]byte, 4096), 0o600))
		dir := t.TempDir()
		require.NoError(t, os.Symlink(project, filepath.Join(dir, "v1")))
		_, err := adapter.OpenDiskCache(dir, adapter.WithDiskCacheMaxBytes(1024))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "symbolic link")
		assert.FileExists(t, precious, "nothing outside the cache is removed")
	})
	t.Run("not a directory", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "v1"), nil, 0o600))
		_, err := adapter.OpenDiskCache(dir)
		assert.Error(t, err)
	})
}

// TestDiskCacheNoLinksOut: links inside the cache's directory never lead
// a read, a write or an eviction out of it (security review 4, P6): a
// shard replaced by a link to another directory is neither read nor
// written through, and eviction removes nothing there; an entry that is
// a link to a file outside is not served.
func TestDiskCacheNoLinksOut(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	c := openDisk(t, dir, adapter.WithDiskCacheMaxEntries(3))
	c.Put(ctx, "k", diskEntry("k"))
	files := diskFiles(t, dir)
	require.Len(t, files, 1)
	entry, shard := files[0], filepath.Dir(files[0])
	good, err := os.ReadFile(entry)
	require.NoError(t, err)

	t.Run("a linked entry", func(t *testing.T) {
		outside := filepath.Join(t.TempDir(), "entry")
		require.NoError(t, os.WriteFile(outside, good, 0o600))
		require.NoError(t, os.Remove(entry))
		require.NoError(t, os.Symlink(outside, entry))
		_, ok, err := c.Lookup(ctx, "k")
		assert.False(t, ok, "a link out of the cache is not followed")
		assert.Error(t, err)
		require.NoError(t, os.Remove(entry))
	})
	t.Run("a linked shard", func(t *testing.T) {
		outside := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(outside, filepath.Base(entry)), good, 0o600))
		require.NoError(t, os.RemoveAll(shard))
		require.NoError(t, os.Symlink(outside, shard))
		_, ok, err := c.Lookup(ctx, "k")
		assert.False(t, ok, "a read does not follow the link")
		assert.Error(t, err)
		assert.Error(t, c.Store(ctx, "k", diskEntry("k")), "nor does a write")
		ents, err := os.ReadDir(outside)
		require.NoError(t, err)
		assert.Len(t, ents, 1, "nothing was written outside")
		// Eviction scans past the bound: nothing outside is removed.
		for i := range 10 {
			c.Put(ctx, strconv.Itoa(i), diskEntry(strconv.Itoa(i)))
		}
		_, err = adapter.OpenDiskCache(dir, adapter.WithDiskCacheMaxEntries(1))
		require.NoError(t, err)
		assert.FileExists(t, filepath.Join(outside, filepath.Base(entry)), "eviction stays inside the cache")
	})
}

// TestDiskCacheFIFO: a FIFO planted at an entry's path is a corrupt entry,
// found at once; before, opening it blocked the lookup (and the call)
// until a writer came, past any deadline (security review 4, P6).
func TestDiskCacheFIFO(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	c := openDisk(t, dir)
	c.Put(ctx, "k", diskEntry("k"))
	files := diskFiles(t, dir)
	require.Len(t, files, 1)
	require.NoError(t, os.Remove(files[0]))
	if err := mkfifo(files[0]); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	type lookup struct {
		ok  bool
		err error
	}
	done := make(chan lookup, 1)
	go func() {
		_, ok, err := c.Lookup(ctx, "k")
		done <- lookup{ok, err}
	}()
	select {
	case l := <-done:
		assert.False(t, l.ok)
		assert.ErrorIs(t, l.err, adapter.ErrCorruptCacheEntry)
	case <-time.After(time.Minute): // a hang, not a slow lookup
		t.Fatal("Lookup blocked on a FIFO")
	}
	assert.Equal(t, int64(1), c.Stats().Corrupt)
}
