package adapter

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// DiskCache is a [Cache] kept in a directory, for development and
// evaluation loops: entries survive restarts, several processes may share
// one directory, and its size is bounded. Make one with [OpenDiskCache].
//
// Each entry is one file, named by the SHA-256 of its key, in one of 256
// subdirectories of dir/v1 (the format version: a later format lives
// beside it, and neither reads the other's files). A file holds a header
// with the version and the whole key, then the entry's JSON; a file whose
// header or key does not match, or whose JSON does not decode, is ignored
// (a miss, counted in [DiskCacheStats].Corrupt) and replaced by the next
// Put of its key. Writes go to a temporary file in the same directory,
// renamed into place, so a reader in any process sees a whole entry or
// none, and the last writer of a key wins. Files are not synced to disk:
// after a power loss an entry may be missing or corrupt, never wrong.
//
// When the files it knows of pass a bound ([WithDiskCacheMaxBytes],
// [WithDiskCacheMaxEntries]), a Put scans the directory and removes the least
// recently used files (by modification time, which a hit refreshes at most
// once a minute) until the cache is nine tenths of the bound. Each
// process counts its own writes between scans, so with several processes
// writing at once the directory may pass the bound by up to a tenth of it
// per process until one of them scans. A scan tolerates files that other
// processes add or remove meanwhile, and removes temporary files that a
// crashed writer left more than an hour ago.
//
// The directory is trusted as the cache itself is: whoever can write it
// can answer your calls. So it must be this user's own: OpenDiskCache
// creates dir/v1 readable by its owner only (0700, files 0600), tightens
// one of the user's own that others may read, and refuses one that is a
// symbolic link, that belongs to another user, or that others may write
// (a directory planted before the first use, on a shared machine). Every
// file is reached through an [os.Root] on dir/v1, so no link leads a read,
// a write or an eviction out of it, and an entry that is not a regular
// file (a FIFO, a device) is ignored as corrupt without blocking.
//
// A DiskCache is safe for concurrent use. Errors reading or writing are
// counted, never returned: a failing disk makes the calls go to the LM.
type DiskCache struct {
	dir        string   // dir/v1, for errors
	root       *os.Root // dir/v1: every file is reached through it
	maxBytes   int64
	maxEntries int

	mu      sync.Mutex
	bytes   int64 // the files' sizes as last scanned, plus this process's writes since
	entries int
	shards  [256]atomic.Bool // subdirectories known to exist

	evicting atomic.Bool
	stats    struct{ hits, misses, corrupt, errors, oversize, evicted, local atomic.Int64 }

	logger *slog.Logger // nil: slog.Default()
}

// DiskCacheStats counts what a [DiskCache] did since it was opened, in
// this process.
type DiskCacheStats struct {
	Hits, Misses int64
	// Corrupt counts files that were ignored: a header, key or JSON that
	// did not match (a file from another program, cut by a crash, or a
	// hash collision).
	Corrupt int64
	// Errors counts failures to read or write a file other than a missing
	// one (permissions, a full disk).
	Errors int64
	// Oversize counts entries not stored because one alone passes
	// MaxBytes.
	Oversize int64
	// Evicted counts files this process removed to keep the bound.
	Evicted int64
	// Local counts the entries stored under a key of an LM identified per
	// process ([LocalCacheKey]): no other process will read them, and
	// this one only while the LM lives. The first is logged at Warn (see
	// [WithDiskCacheLogger]). Declare the LM's identity with [WithIdentity]
	// to share them.
	Local int64
	// Bytes and Entries are this process's estimate of the directory's
	// size: as last scanned, plus its own writes since.
	Bytes   int64
	Entries int
}

// DiskCacheOption configures [OpenDiskCache].
type DiskCacheOption func(*DiskCache)

// WithDiskCacheMaxBytes bounds the total size of the cache's files (1 GiB by
// default; n < 1 keeps the default).
func WithDiskCacheMaxBytes(n int64) DiskCacheOption {
	return func(c *DiskCache) {
		if n > 0 {
			c.maxBytes = n
		}
	}
}

// WithDiskCacheMaxEntries bounds the number of entries (unbounded by default;
// n < 1 means unbounded).
func WithDiskCacheMaxEntries(n int) DiskCacheOption {
	return func(c *DiskCache) { c.maxEntries = max(n, 0) }
}

// WithDiskCacheLogger sets the logger the cache warns on, once, when it first
// stores an entry no other process will read (see DiskCacheStats.Local);
// slog.Default() when unset or nil.
func WithDiskCacheLogger(l *slog.Logger) DiskCacheOption {
	return func(c *DiskCache) { c.logger = l }
}

// diskCacheVersion names the directory of this file format, and is
// written in every file's header.
const diskCacheVersion = "v1"

// entryHeader starts what MarshalCacheEntry writes, followed by the key's
// length in decimal, a newline, the key, a newline and the entry's JSON.
// Its version changes with the format, and so does the directory of a
// DiskCache.
const entryHeader = "sigwire-cache " + diskCacheVersion + " "

// diskTouchEvery is how stale a hit file's modification time may grow
// before a hit refreshes it: least recently used to the minute, for one
// system call a minute per hot entry.
const diskTouchEvery = time.Minute

// diskTempPrefix starts the names of files being written.
const diskTempPrefix = ".tmp-"

// OpenDiskCache opens (creating it if needed) a disk cache in dir. See
// [DiskCache] for what it guarantees; wrap it with [Cached] to use it:
//
//	cache, err := adapter.OpenDiskCache(".cache/lm", adapter.WithDiskCacheMaxBytes(256<<20))
//	lm := adapter.WithMiddleware(client, adapter.Cached(cache))
//
// It refuses a dir/v1 that is not this user's own directory (see
// [DiskCache]), and scans the directory once, to learn its size and to
// evict what passes the bound.
func OpenDiskCache(dir string, opts ...DiskCacheOption) (*DiskCache, error) {
	if dir == "" {
		return nil, errors.New("adapter: OpenDiskCache: empty directory name")
	}
	c := &DiskCache{dir: filepath.Join(dir, diskCacheVersion), maxBytes: 1 << 30}
	for _, o := range opts {
		if o != nil {
			o(c)
		}
	}
	root, err := openCacheRoot(c.dir)
	if err != nil {
		return nil, fmt.Errorf("adapter: OpenDiskCache: %w", err)
	}
	c.root = root
	if err := c.scan(); err != nil {
		return nil, fmt.Errorf("adapter: OpenDiskCache: %w", err)
	}
	return c, nil
}

// openCacheRoot creates dir (and its parents) if need be and opens it as
// a root, once it is sure the directory is the user's own: not a link,
// not another user's, not writable by others; others' read permission is
// taken away.
func openCacheRoot(dir string) (*os.Root, error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return nil, err
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, fmt.Errorf("%s is a symbolic link: the cache's directory must be its own (remove the link)", dir)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	// The directory opened is the one checked: Lstat saw no link, and
	// the root's own Stat (of the open directory) must be the same file.
	opened, err := root.Stat(".")
	if err == nil && !os.SameFile(fi, opened) {
		err = fmt.Errorf("%s changed while it was opened", dir)
	}
	if err == nil {
		err = checkOwnDir(dir, opened)
	}
	if err == nil && opened.Mode().Perm()&0o077 != 0 {
		err = root.Chmod(".", 0o700) // the user's own, readable by others: readable by its owner only
	}
	if err != nil {
		root.Close()
		return nil, err
	}
	return root, nil
}

// checkOwnDir refuses a directory that others may write, or that belongs
// to another user (see ownerOf).
func checkOwnDir(dir string, fi fs.FileInfo) error {
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if uid, mine := ownerOf(fi); !mine {
		return fmt.Errorf("%s belongs to another user (uid %d): the cache's directory must be its user's own (remove it, or give the cache another directory)", dir, uid)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s is writable by others (mode %v): whoever wrote it could answer the calls (check what it holds, then chmod 700 it, or remove it)", dir, fi.Mode().Perm())
	}
	return nil
}

// Stats returns the cache's counters.
func (c *DiskCache) Stats() DiskCacheStats {
	c.mu.Lock()
	b, n := c.bytes, c.entries
	c.mu.Unlock()
	return DiskCacheStats{
		Hits: c.stats.hits.Load(), Misses: c.stats.misses.Load(), Corrupt: c.stats.corrupt.Load(),
		Errors: c.stats.errors.Load(), Oversize: c.stats.oversize.Load(), Evicted: c.stats.evicted.Load(),
		Local: c.stats.local.Load(), Bytes: b, Entries: n,
	}
}

// path returns the shard index and the file of key, beneath the root.
func (c *DiskCache) path(key string) (int, string) {
	sum := sha256.Sum256([]byte(key))
	name := hex.EncodeToString(sum[:])
	return int(sum[0]), name[:2] + "/" + name
}

// Get returns the entry stored for key: a miss when there is none, or the
// file cannot be read or is not an entry for key (see Lookup).
func (c *DiskCache) Get(ctx context.Context, key string) (CacheEntry, bool) {
	e, ok, _ := c.Lookup(ctx, key)
	return e, ok
}

// Lookup returns the entry stored for key, as Get does, and why a file
// that is there could not be served: a read error, or an error matching
// [ErrCorruptCacheEntry] for a file that is not an entry for key. No file
// is a miss with a nil error. Through [Cached], such an error is counted
// in Result.CacheErrors and reported to [Trace].CacheError.
func (c *DiskCache) Lookup(_ context.Context, key string) (CacheEntry, bool, error) {
	_, name := c.path(key)
	e, mod, err := readDiskEntry(c.root, name, key, c.maxBytes)
	if err != nil {
		c.stats.misses.Add(1)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return CacheEntry{}, false, nil
		case errors.Is(err, ErrCorruptCacheEntry):
			c.stats.corrupt.Add(1)
		default:
			c.stats.errors.Add(1)
		}
		return CacheEntry{}, false, fmt.Errorf("adapter: disk cache: %w", err)
	}
	if now := time.Now(); now.Sub(mod) > diskTouchEvery {
		_ = c.root.Chtimes(name, now, now) // the file may be gone already: fine
	}
	c.stats.hits.Add(1)
	return e, true, nil
}

// readDiskEntry reads and checks the file of key, returning its entry and
// modification time. It opens the file without blocking (a FIFO in its
// place is refused, not waited on) and reads only a regular file.
func readDiskEntry(root *os.Root, name, key string, limit int64) (CacheEntry, time.Time, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|openNonBlocking, 0)
	if err != nil {
		return CacheEntry{}, time.Time{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return CacheEntry{}, time.Time{}, err
	}
	if fi.Size() > limit || !fi.Mode().IsRegular() {
		return CacheEntry{}, time.Time{}, ErrCorruptCacheEntry
	}
	b := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, b); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			err = ErrCorruptCacheEntry // cut short by a writer outside this cache
		}
		return CacheEntry{}, time.Time{}, err
	}
	e, err := UnmarshalCacheEntry(key, b)
	return e, fi.ModTime(), err
}

// MarshalCacheEntry encodes e for a store that keeps bytes (a file, a
// Redis value): a header naming the format version, the whole key, then
// the entry's JSON. [UnmarshalCacheEntry] gives e back only for the same
// key, so that a copied, renamed or colliding value is never served for
// another request.
func MarshalCacheEntry(key string, e CacheEntry) ([]byte, error) {
	js, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(entryHeader)+24+len(key)+len(js))
	b = append(b, entryHeader...)
	b = strconv.AppendInt(b, int64(len(key)), 10)
	b = append(b, '\n')
	b = append(b, key...)
	b = append(b, '\n')
	return append(b, js...), nil
}

// UnmarshalCacheEntry decodes what [MarshalCacheEntry] wrote for key. Bytes
// of another format version, written for another key, cut short, or
// whose JSON is not a reply with at least one choice are an error that
// matches [ErrCorruptCacheEntry].
func UnmarshalCacheEntry(key string, b []byte) (CacheEntry, error) {
	rest, ok := bytes.CutPrefix(b, []byte(entryHeader))
	if !ok {
		return CacheEntry{}, fmt.Errorf("%w: no %q header", ErrCorruptCacheEntry, entryHeader)
	}
	num, rest, ok := bytes.Cut(rest, []byte{'\n'})
	n, err := strconv.Atoi(string(num))
	// n is compared with no arithmetic on it: a stored length near
	// math.MaxInt would wrap n+1 (the value is untrusted).
	if !ok || len(num) > 20 || err != nil || n < 0 || n >= len(rest) || rest[n] != '\n' {
		return CacheEntry{}, fmt.Errorf("%w: bad key length", ErrCorruptCacheEntry)
	}
	if string(rest[:n]) != key {
		return CacheEntry{}, fmt.Errorf("%w: stored for another key", ErrCorruptCacheEntry)
	}
	var e CacheEntry
	if err := json.Unmarshal(rest[n+1:], &e); err != nil {
		return CacheEntry{}, fmt.Errorf("%w: %w", ErrCorruptCacheEntry, err)
	}
	if len(e.Response.Choices) == 0 {
		return CacheEntry{}, fmt.Errorf("%w: a reply without choices", ErrCorruptCacheEntry)
	}
	return e, nil
}

// Put stores entry under key, replacing any entry of the same key. An
// entry larger than the cache's MaxBytes is not stored (see Store).
func (c *DiskCache) Put(ctx context.Context, key string, entry CacheEntry) {
	_ = c.Store(ctx, key, entry)
}

// Store stores entry under key, as Put does, and returns why it could not
// (a write error). An entry larger than MaxBytes is skipped, not an
// error: it is counted in DiskCacheStats.Oversize.
func (c *DiskCache) Store(_ context.Context, key string, entry CacheEntry) error {
	b, err := MarshalCacheEntry(key, entry)
	if err != nil {
		c.stats.errors.Add(1)
		return fmt.Errorf("adapter: disk cache: %w", err)
	}
	if int64(len(b)) > c.maxBytes {
		c.stats.oversize.Add(1)
		return nil
	}
	shard, name := c.path(key)
	if err := c.write(shard, name, b); err != nil {
		c.stats.errors.Add(1)
		return fmt.Errorf("adapter: disk cache: %w", err)
	}
	if LocalCacheKey(key) && c.stats.local.Add(1) == 1 {
		logger := c.logger
		if logger == nil {
			logger = slog.Default()
		}
		logger.Warn("adapter: disk cache: an entry stored under an LM identity of this process alone: no other process will read it; declare the LM's identity with adapter.WithIdentity (DiskCacheStats.Local counts them)",
			slog.String("dir", c.dir))
	}
	c.mu.Lock()
	c.bytes += int64(len(b))
	c.entries++
	over := c.over(c.bytes, c.entries)
	c.mu.Unlock()
	if over {
		c.evict()
	}
	return nil
}

// write puts b at name atomically: a temporary file in the same
// directory, renamed into place.
func (c *DiskCache) write(shard int, name string, b []byte) error {
	dir := path.Dir(name)
	if !c.shards[shard].Load() {
		if err := c.root.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		c.shards[shard].Store(true)
	}
	tmp := dir + "/" + diskTempPrefix + randomSuffix()
	f, err := c.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) { // the directory was removed under us
			c.shards[shard].Store(false)
		}
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = c.root.Rename(tmp, name)
	}
	if err != nil {
		_ = c.root.Remove(tmp)
	}
	return err
}

// randomSuffix names a temporary file.
func randomSuffix() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand panics rather)
	return hex.EncodeToString(b[:])
}

// over reports sizes past the bound.
func (c *DiskCache) over(bytes int64, entries int) bool {
	return bytes > c.maxBytes || (c.maxEntries > 0 && entries > c.maxEntries)
}

// evict scans the directory and, past the bound, removes the least
// recently used files down to nine tenths of it. One scan runs at a time
// in a process; a Put that finds one running goes on.
func (c *DiskCache) evict() {
	if !c.evicting.CompareAndSwap(false, true) {
		return
	}
	defer c.evicting.Store(false)
	if err := c.scan(); err != nil {
		c.stats.errors.Add(1)
	}
}

type diskFile struct {
	name string
	size int64
	mod  time.Time
}

// scan measures the directory, removes stale temporary files and, past
// the bound, the least recently used entries, and records the size left.
func (c *DiskCache) scan() error {
	shards, err := readDirOf(c.root, ".")
	if err != nil {
		return err
	}
	var files []diskFile
	var total int64
	staleTemp := time.Now().Add(-time.Hour)
	for _, s := range shards {
		if !s.IsDir() || len(s.Name()) != 2 {
			continue // not ours (a link is no directory here: never followed)
		}
		ents, err := readDirOf(c.root, s.Name())
		if err != nil {
			continue // removed meanwhile
		}
		for _, e := range ents {
			info, err := e.Info()
			if err != nil || !info.Mode().IsRegular() {
				continue // vanished meanwhile, or not ours
			}
			name := s.Name() + "/" + e.Name()
			if strings.HasPrefix(e.Name(), diskTempPrefix) {
				if info.ModTime().Before(staleTemp) {
					_ = c.root.Remove(name)
				}
				continue
			}
			files = append(files, diskFile{name, info.Size(), info.ModTime()})
			total += info.Size()
		}
	}
	n := len(files)
	if c.over(total, n) {
		slices.SortFunc(files, func(a, b diskFile) int { return a.mod.Compare(b.mod) })
		keepBytes, keepEntries := c.maxBytes-c.maxBytes/10, c.maxEntries-c.maxEntries/10
		for _, f := range files {
			if total <= keepBytes && (c.maxEntries == 0 || n <= keepEntries) {
				break
			}
			err := c.root.Remove(f.name)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err == nil {
				c.stats.evicted.Add(1)
			}
			total -= f.size
			n--
		}
	}
	c.mu.Lock()
	c.bytes, c.entries = total, n
	c.mu.Unlock()
	return nil
}

// readDirOf lists the directory name beneath root.
func readDirOf(root *os.Root, name string) ([]fs.DirEntry, error) {
	d, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.ReadDir(-1)
}
