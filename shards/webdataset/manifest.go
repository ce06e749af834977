package webdataset

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/gdsload/gdsload/internal/crc32c"

	"github.com/gdsload/gdsload/internal/durable"
	"github.com/gdsload/gdsload/internal/regular"
)

// ManifestName is the file name of a manifest, kept beside the shards.
const ManifestName = "index.json"

// Manifest format identifiers.
const (
	ManifestFormat  = "webdataset"
	ManifestVersion = 1
)

var (
	// ErrShardSize reports a shard whose size differs from its manifest entry.
	ErrShardSize = errors.New("shard size differs from manifest")
	// ErrShardChecksum reports a shard whose SHA-256 differs from its
	// manifest entry.
	ErrShardChecksum = errors.New("shard checksum differs from manifest")
)

// Manifest lists the shards of a dataset, in dataset order.
type Manifest struct {
	Format  string       `json:"format"`
	Version int          `json:"version"`
	Shards  []ShardEntry `json:"shards"`
}

// ShardEntry describes one shard. Name is relative to the manifest's
// directory, with forward slashes (bytes that are not UTF-8 are escaped in
// JSON; see MarshalJSON). SampleBytes (the total field bytes of its
// samples, i.e. what holding all its samples in memory costs) is optional;
// readers that need it fall back to Bytes when it is zero.
//
// SHA256 is the digest of the stored bytes. CRC32C, optional (manifests
// before it lack it), is their CRC-32C (Castagnoli), 8 hex digits: readers
// that check every shard as they read it (the iterator) check it instead
// of SHA-256, since it costs a small fraction of decompressing the shard
// where SHA-256 costs more than that. It detects damage (every burst of
// up to 32 bits, other changes but for one chance in 2^32), not deliberate
// tampering, which SHA-256 does (VerifyShard checks both). An entry with
// a CRC32C also says that the shard was read to the end of its compressed
// stream when the entry was made, so its gzip and zstd checksums held
// (ScanShard does; entries made before CRC32C was added may not have).
//
// SplitFirst marks a shard whose first sample has the key of the last
// sample of the shard before it: one sample split across two shards
// (WebDataset writers never split a sample; a shard cut by hand may).
// Each shard is read alone (in any order), so readers yield the two parts
// as two samples with the same key, and Samples counts each part;
// Manifest.Samples counts the sample once.
type ShardEntry struct {
	Name        string `json:"name"`
	Bytes       int64  `json:"bytes"`
	Samples     int64  `json:"samples"`
	SHA256      string `json:"sha256"`
	CRC32C      string `json:"crc32c,omitempty"`
	SampleBytes int64  `json:"sample_bytes,omitempty"`
	SplitFirst  bool   `json:"split_first,omitempty"`

	// FirstKey and LastKey are the keys of the first and last samples, as
	// a scan saw them (BuildManifestFrom compares neighbours' to set
	// SplitFirst); not written to the manifest.
	FirstKey string `json:"-"`
	LastKey  string `json:"-"`
}

// Samples returns the number of samples in the dataset, a sample split
// across two shards counted once (see ShardEntry.SplitFirst).
func (m *Manifest) Samples() int64 {
	var n int64
	for _, e := range m.Shards {
		n += e.Samples
		if e.SplitFirst {
			n--
		}
	}
	return n
}

// Warnings describes what in the dataset readers handle but users should
// know of: samples split across two shards.
func (m *Manifest) Warnings() []string {
	var w []string
	for i, e := range m.Shards {
		if e.SplitFirst && i > 0 {
			w = append(w, fmt.Sprintf("a sample is split across shards %s and %s (its members are at the end of one and the start of the other); each shard is read alone, so it is read as two samples with the same key: write it into one shard", m.Shards[i-1].Name, e.Name))
		}
	}
	return w
}

// Validate checks the manifest's format, version and entries: names are
// clean relative paths without "..", unique; counts are not negative;
// checksums are 64 hex digits.
func (m *Manifest) Validate() error {
	if m.Format != ManifestFormat {
		return fmt.Errorf("manifest format is %q, want %q", m.Format, ManifestFormat)
	}
	if m.Version != ManifestVersion {
		return fmt.Errorf("manifest version %d is not supported (want %d)", m.Version, ManifestVersion)
	}
	seen := make(map[string]bool, len(m.Shards))
	for i, s := range m.Shards {
		switch {
		case s.Name == "" || strings.ContainsRune(s.Name, 0) || path.IsAbs(s.Name) || !filepath.IsLocal(filepath.FromSlash(s.Name)) || path.Clean(s.Name) != s.Name:
			return fmt.Errorf("manifest shard %d: name %q is not a clean relative path", i, s.Name)
		case seen[s.Name]:
			return fmt.Errorf("manifest shard %d: name %q listed twice", i, s.Name)
		case s.Bytes < 0 || s.Samples < 0 || s.SampleBytes < 0:
			return fmt.Errorf("manifest shard %q: negative size or count", s.Name)
		}
		if _, err := hex.DecodeString(s.SHA256); err != nil || len(s.SHA256) != 64 {
			return fmt.Errorf("manifest shard %q: sha256 %q is not 64 hex digits", s.Name, s.SHA256)
		}
		if _, err := hex.DecodeString(s.CRC32C); s.CRC32C != "" && (err != nil || len(s.CRC32C) != 8) {
			return fmt.Errorf("manifest shard %q: crc32c %q is not 8 hex digits", s.Name, s.CRC32C)
		}
		seen[s.Name] = true
	}
	return nil
}

// ReadManifest reads and validates a manifest. p is the manifest file or the
// directory holding index.json.
func ReadManifest(p string) (*Manifest, error) {
	if fi, err := os.Stat(p); err == nil && fi.IsDir() {
		p = filepath.Join(p, ManifestName)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("reading manifest: %w", err)
	}
	return DecodeManifest(b, p)
}

// DecodeManifest decodes and validates the manifest b read from where (a
// path or URL, for the errors).
func DecodeManifest(b []byte, where string) (*Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("manifest %s: %w; rewrite it with 'gdsload manifest'", where, err)
	}
	for i := range m.Shards {
		m.Shards[i].SHA256 = strings.ToLower(m.Shards[i].SHA256) // digests compare as lowercase hex
		m.Shards[i].CRC32C = strings.ToLower(m.Shards[i].CRC32C)
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, where)
	}
	return &m, nil
}

// WriteManifest writes m as dir/index.json atomically (a temporary file
// in dir is written, synced and renamed over the old manifest, then dir is
// synced), so readers see the old or the new manifest, never a torn one.
func WriteManifest(ctx context.Context, dir string, m *Manifest) error {
	if err := m.Validate(); err != nil {
		return err
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding manifest: %w", err)
	}
	b = append(b, '\n')
	if err := durable.WriteFile(filepath.Join(dir, ManifestName), b); err != nil {
		return fmt.Errorf("writing manifest in %s: %w", dir, err)
	}
	return nil
}

// BuildManifest scans every shard in dir and its subfolders (ShardFiles), counting samples and hashing the bytes; several shards are scanned
// in parallel. It does not write the manifest; see WriteManifest.
func BuildManifest(ctx context.Context, dir string, opts ...Option) (*Manifest, error) {
	names, _, err := ShardFiles(dir)
	if err != nil {
		return nil, err
	}
	return BuildManifestFrom(ctx, names, runtime.GOMAXPROCS(0), func(ctx context.Context, name string) (ShardEntry, error) {
		return ScanShard(ctx, filepath.Join(dir, name), opts...)
	}, opts...)
}

// ErrShardSkipped marks a shard left out because a ShardErrorHandler said
// to go on without it.
var ErrShardSkipped = errors.New("shard skipped")

// ShardErrorHandler decides what becomes of a shard that cannot be read
// (corrupt, truncated, unreadable): return nil to leave it out and go on,
// or an error (err itself, say) to stop with it. It is WebDataset's
// handler= argument; see WarnAndContinue. name is the shard as the caller
// knows it.
type ShardErrorHandler func(name string, err error) error

// WarnAndContinue returns a ShardErrorHandler that writes one line to w
// for each shard that cannot be read and goes on without it, as
// WebDataset's warn_and_continue does. Writes are serialized.
func WarnAndContinue(w io.Writer) ShardErrorHandler {
	var mu sync.Mutex
	return func(name string, err error) error {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, "warning: skipping shard %s: %v\n", name, err)
		return nil
	}
}

// WithShardErrorHandler has BuildManifest and BuildManifestFrom hand each
// shard that fails to scan to h, and leave it out of the manifest when h
// returns nil. By default (nil) the first failure fails the build, as a
// manifest that silently lacks a shard is rarely wanted. Shards are
// scanned in parallel: h may be called from several goroutines at once.
func WithShardErrorHandler(h ShardErrorHandler) Option {
	return func(o *options) error { o.onShardError = h; return nil }
}

// ShardFiles lists the shard files in dir and its subfolders (regular
// files that IsShardName accepts), as slash-separated paths relative to
// dir sorted by name, and their total size. Folders whose names begin with
// a dot (.git, a stage's sidecar) are not entered. A shard compressed in a
// way this package does not read (UnreadShard: .tar.xz, say) is an error
// wrapping ErrUnreadShards that names each, rather than a shard left out
// without a word.
func ShardFiles(dir string) (names []string, total int64, err error) {
	var unread, how []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != dir && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if c, ok := UnreadShard(d.Name()); ok {
			unread, how = append(unread, rel), append(how, c)
			return nil
		}
		if !IsShardName(d.Name()) {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		names = append(names, rel)
		total += fi.Size()
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("listing shards: %w", err)
	}
	if len(unread) > 0 {
		return nil, 0, unreadShardsError(dir, unread, how)
	}
	slices.Sort(names)
	return names, total, nil
}

// BuildManifestFrom builds the manifest of the named shards with scan (a
// local file or a remote one), up to workers scans at a time, entries in
// the order of names. The first failing scan cancels the others and is the
// error returned, unless WithShardErrorHandler is among opts (the only
// option that applies here) and its handler says to skip the shard. A
// shard whose first sample continues the previous shard's last one (by
// the scans' FirstKey and LastKey) is marked SplitFirst.
func BuildManifestFrom(ctx context.Context, names []string, workers int, scan func(ctx context.Context, name string) (ShardEntry, error), opts ...Option) (*Manifest, error) {
	o, err := resolveOptions(opts)
	if err != nil {
		return nil, err
	}
	if h := o.onShardError; h != nil {
		inner := scan
		scan = func(ctx context.Context, name string) (ShardEntry, error) {
			e, err := inner(ctx, name)
			if err == nil {
				return e, nil
			}
			if cerr := ctx.Err(); cerr != nil {
				return e, cerr // stopping already: the error that stopped it is the one to report
			}
			if herr := h(name, err); herr != nil {
				return e, herr
			}
			return e, fmt.Errorf("%w: %w", ErrShardSkipped, err)
		}
	}
	m := &Manifest{Format: ManifestFormat, Version: ManifestVersion, Shards: make([]ShardEntry, len(names))}
	errs := make([]error, len(names))
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(max(workers, 1), max(len(names), 1)) {
		wg.Go(func() {
			for i := range next {
				m.Shards[i], errs[i] = scan(ctx, names[i])
				m.Shards[i].Name = names[i]
				if errs[i] != nil && !errors.Is(errs[i], ErrShardSkipped) {
					cancel()
				}
			}
		})
	}
feed:
	for i := range names {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := parent.Err(); err != nil {
		return nil, err
	}
	kept := m.Shards[:0]
	var rest []error
	for i, err := range errs {
		switch {
		case err == nil:
			kept = append(kept, m.Shards[i])
		case errors.Is(err, ErrShardSkipped):
		case !errors.Is(err, context.Canceled):
			return nil, err
		default:
			rest = append(rest, err)
		}
	}
	if err := errors.Join(rest...); err != nil {
		return nil, err
	}
	m.Shards = kept
	for i := 1; i < len(m.Shards); i++ {
		prev, e := &m.Shards[i-1], &m.Shards[i]
		e.SplitFirst = prev.Samples > 0 && e.Samples > 0 && prev.LastKey != "" && prev.LastKey == e.FirstKey
	}
	return m, nil
}

// ScanShard reads one shard file completely and returns its entry: size,
// sample count, total sample bytes, SHA-256 (unless WithSHA256(false)) and
// CRC-32C of the file. Name is the file's base name.
func ScanShard(ctx context.Context, p string, opts ...Option) (ShardEntry, error) {
	f, _, err := regular.Open(p)
	if err != nil {
		return ShardEntry{}, fmt.Errorf("scanning shard: %w", err)
	}
	defer f.Close()
	return ScanShardReader(ctx, f, filepath.Base(p), opts...)
}

// ScanShardReader is ScanShard for a shard read from r (a remote file, say):
// it reads r to the end. name is the shard's name (compression is detected
// from it and its bytes), used in the entry and in errors.
func ScanShardReader(ctx context.Context, r io.Reader, name string, opts ...Option) (ShardEntry, error) {
	o, err := resolveOptions(opts)
	if err != nil {
		return ShardEntry{}, err
	}
	crc := crc32c.New()
	var h hash.Hash
	var sums io.Writer = crc
	if o.sha256 {
		h = sha256.New()
		sums = io.MultiWriter(h, crc)
	}
	cf := &countingReader{r: io.TeeReader(r, sums), progress: o.progress}
	opts = append([]Option{WithName(name)}, opts...)
	rd, err := NewReader(cf, CompressionFromName(name), opts...)
	if err != nil {
		return ShardEntry{}, err
	}
	defer rd.Close()
	e := ShardEntry{Name: name}
	for {
		if e.Samples%256 == 0 && ctx.Err() != nil {
			return ShardEntry{}, ctx.Err()
		}
		key, size, err := rd.Skip()
		if err == io.EOF {
			break
		}
		if err != nil {
			return ShardEntry{}, err
		}
		e.countSample(key, size)
	}
	if _, err := io.Copy(io.Discard, cf); err != nil {
		return ShardEntry{}, fmt.Errorf("scanning shard %s: %w", name, err)
	}
	e.Bytes = cf.n
	if h != nil {
		e.SHA256 = hex.EncodeToString(h.Sum(nil))
	}
	e.CRC32C = crcHex(crc.Sum32())
	return e, nil
}

// ScanShardBytes is ScanShard for a whole shard held in memory (a mapped
// file, say), for callers that scan many: dec decompresses it (checking
// its trailers and frame checksums) into buf[:0], which is returned,
// possibly grown, for the next call; the tar is then walked in memory
// (Reader.ResetBytes). Its counts equal ScanShard's. It costs a fraction
// of ScanShard's CPU time, most of it decompression
// (docs/PERFORMANCE-NOTES.md, shards/iterator), and needs memory for the
// decompressed shard.
// WithCRC32C(false) and WithSHA256(false) leave the digests out.
func ScanShardBytes(ctx context.Context, data []byte, name string, dec *Decompressor, buf []byte, opts ...Option) (ShardEntry, []byte, error) {
	o, err := resolveOptions(opts)
	if err != nil {
		return ShardEntry{}, buf, err
	}
	e := ShardEntry{Name: name, Bytes: int64(len(data))}
	if o.crc32c {
		e.CRC32C = crcHex(crc32c.Checksum(data))
	}
	if o.sha256 {
		sum := sha256.Sum256(data)
		e.SHA256 = hex.EncodeToString(sum[:])
	}
	tarData, err := dec.Decompress(buf, data, Auto, name)
	if err != nil {
		return ShardEntry{}, buf, err
	}
	if DetectCompression(name, data) != None {
		buf = tarData
	}
	rd := &Reader{o: o}
	rd.ResetBytes(tarData, name)
	for {
		if e.Samples%256 == 0 && ctx.Err() != nil {
			return ShardEntry{}, buf, ctx.Err()
		}
		key, size, err := rd.Skip()
		if err == io.EOF {
			break
		}
		if err != nil {
			return ShardEntry{}, buf, err
		}
		e.countSample(key, size)
	}
	if o.progress != nil {
		o.progress(e.Bytes)
	}
	return e, buf, nil
}

// countSample adds a sample with key and size bytes to a scan's entry.
func (e *ShardEntry) countSample(key string, size int64) {
	if e.Samples == 0 {
		e.FirstKey = key
	}
	e.LastKey = key
	e.Samples++
	e.SampleBytes += size
}

// VerifyShard checks the shard file at p against its manifest entry (size,
// then SHA-256 and, when the entry has one, CRC-32C) and names the shard
// in any mismatch.
func VerifyShard(p string, e ShardEntry) error {
	f, fi, err := regular.Open(p)
	if err != nil {
		return fmt.Errorf("verifying shard %s: %w", e.Name, err)
	}
	defer f.Close()
	if fi.Size() != e.Bytes {
		return fmt.Errorf("shard %s (%s): %w: %d bytes on disk, %d in manifest", e.Name, p, ErrShardSize, fi.Size(), e.Bytes)
	}
	h, crc := sha256.New(), crc32c.New()
	if _, err := io.Copy(io.MultiWriter(h, crc), f); err != nil {
		return fmt.Errorf("verifying shard %s: %w", e.Name, err)
	}
	if err := checkSum(e, h.Sum(nil)); err != nil {
		return err
	}
	return checkCRC(e, crc.Sum32())
}

// VerifyShardBytes checks a shard already in memory against its entry:
// size, SHA-256 and, when the entry has one, CRC-32C.
func VerifyShardBytes(data []byte, e ShardEntry) error {
	if err := checkSize(data, e); err != nil {
		return err
	}
	sum := sha256.Sum256(data)
	if err := checkSum(e, sum[:]); err != nil {
		return err
	}
	return checkCRC(e, crc32c.Checksum(data))
}

// VerifyShardBytesQuick checks a shard already in memory against its
// entry for damage at memory speed: size, then CRC-32C when the entry has
// one, else (older manifests) SHA-256. An entry with neither is checked
// for size only. See ShardEntry for what each digest guards against.
func VerifyShardBytesQuick(data []byte, e ShardEntry) error {
	if err := checkSize(data, e); err != nil {
		return err
	}
	switch {
	case e.CRC32C != "":
		return checkCRC(e, crc32c.Checksum(data))
	case e.SHA256 != "":
		sum := sha256.Sum256(data)
		return checkSum(e, sum[:])
	}
	return nil
}

func checkSize(data []byte, e ShardEntry) error {
	if int64(len(data)) != e.Bytes {
		return fmt.Errorf("shard %s: %w: %d bytes read, %d in manifest", e.Name, ErrShardSize, len(data), e.Bytes)
	}
	return nil
}

func checkSum(e ShardEntry, sum []byte) error {
	if got := hex.EncodeToString(sum); got != e.SHA256 {
		return fmt.Errorf("shard %s: %w: sha256 %s, manifest says %s", e.Name, ErrShardChecksum, got, e.SHA256)
	}
	return nil
}

// CheckShardCRC32C compares sum, the CRC-32C of a shard's stored bytes,
// with e's: nil when they match or e has none, else an error naming the
// shard that wraps ErrShardChecksum, as VerifyShardBytesQuick's.
func CheckShardCRC32C(e ShardEntry, sum uint32) error { return checkCRC(e, sum) }

// CheckShardSHA256 compares sum, the SHA-256 of a shard's stored bytes,
// with e's: nil when they match, else an error naming the shard that wraps
// ErrShardChecksum, as VerifyShardBytes's.
func CheckShardSHA256(e ShardEntry, sum []byte) error { return checkSum(e, sum) }

func checkCRC(e ShardEntry, sum uint32) error {
	if got := crcHex(sum); e.CRC32C != "" && got != e.CRC32C {
		return fmt.Errorf("shard %s: %w: crc32c %s, manifest says %s", e.Name, ErrShardChecksum, got, e.CRC32C)
	}
	return nil
}

func crcHex(sum uint32) string { return fmt.Sprintf("%08x", sum) }
