package webdataset

import "fmt"

// Default caps. They bound what one hostile or corrupt shard can make a
// Reader allocate; raise them with the options for unusually large samples.
const (
	DefaultMaxMemberBytes = 256 << 20 // one tar member
	DefaultMaxSampleBytes = 1 << 30   // all members of one sample
	DefaultMaxZstdWindow  = 128 << 20 // zstd window (covers --long=27 and --ultra -22)
)

type options struct {
	name            string
	maxMember       int64
	maxSample       int64
	maxZstdWindow   uint64
	zstdConcurrency int
	progress        func(int64)
	sha256          bool
	crc32c          bool
	onShardError    ShardErrorHandler
}

func defaultOptions() options {
	return options{
		maxMember:       DefaultMaxMemberBytes,
		maxSample:       DefaultMaxSampleBytes,
		maxZstdWindow:   DefaultMaxZstdWindow,
		zstdConcurrency: 1,
		sha256:          true,
		crc32c:          true,
	}
}

// resolveOptions is defaultOptions with opts applied in order.
func resolveOptions(opts []Option) (options, error) {
	o := defaultOptions()
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return o, err
		}
	}
	return o, nil
}

// Option configures a Reader.
type Option func(*options) error

// WithName sets the shard name that errors report.
func WithName(name string) Option {
	return func(o *options) error { o.name = name; return nil }
}

// WithMaxMemberBytes caps the size of one tar member; a larger member fails
// with ErrMemberTooLarge before anything is allocated for it.
func WithMaxMemberBytes(n int64) Option {
	return func(o *options) error {
		if n <= 0 {
			return fmt.Errorf("member cap must be positive, got %d", n)
		}
		o.maxMember = n
		return nil
	}
}

// WithMaxSampleBytes caps the total member size of one sample; a larger
// sample fails with ErrSampleTooLarge.
func WithMaxSampleBytes(n int64) Option {
	return func(o *options) error {
		if n <= 0 {
			return fmt.Errorf("sample cap must be positive, got %d", n)
		}
		o.maxSample = n
		return nil
	}
}

// WithMaxZstdWindow caps the zstd window, and with it the decoder's memory.
// Frames that ask for more fail instead of allocating. At least 1 KiB.
func WithMaxZstdWindow(n uint64) Option {
	return func(o *options) error {
		if n < 1<<10 {
			return fmt.Errorf("zstd window cap must be at least 1024, got %d", n)
		}
		o.maxZstdWindow = n
		return nil
	}
}

// WithZstdConcurrency sets how many goroutines the zstd decoder may use
// (default 1: callers usually decode several shards in parallel instead).
func WithZstdConcurrency(n int) Option {
	return func(o *options) error {
		if n < 1 {
			return fmt.Errorf("zstd concurrency must be at least 1, got %d", n)
		}
		o.zstdConcurrency = n
		return nil
	}
}

// WithProgress has ScanShard, ScanShardReader and BuildManifest call f with
// the number of shard bytes read, as they are read (from several goroutines
// at once when BuildManifest scans shards in parallel). Readers ignore it.
func WithProgress(f func(n int64)) Option {
	return func(o *options) error { o.progress = f; return nil }
}

// WithSHA256 sets whether ScanShard, ScanShardReader and BuildManifest
// compute each shard's SHA-256 (default true). Without it an entry has an
// empty SHA256 and only the CRC-32C, which is all a reader checking shards
// as it reads them needs, at a small fraction of SHA-256's cost: opening a
// dataset that has no manifest scans this way. WriteManifest refuses
// entries without SHA-256.
func WithSHA256(on bool) Option {
	return func(o *options) error { o.sha256 = on; return nil }
}

// WithCRC32C sets whether ScanShardBytes takes each shard's CRC-32C
// (default true). Without it and WithSHA256(false), scanning an
// uncompressed shard held in a mapping reads only its tar headers: the
// pages of the payloads are never touched.
func WithCRC32C(on bool) Option {
	return func(o *options) error { o.crc32c = on; return nil }
}

// ScanFingerprint describes the options that decide what a successful scan
// of a shard finds (the caps, the digests taken), leaving out the ones that
// only act on the way (a name, progress, an error handler): two scans of
// the same bytes with options of the same fingerprint give the same
// ShardEntry. A cache of scans keys on it.
func ScanFingerprint(opts ...Option) (string, error) {
	o, err := resolveOptions(opts)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("member=%d sample=%d window=%d sha256=%t crc32c=%t", o.maxMember, o.maxSample, o.maxZstdWindow, o.sha256, o.crc32c), nil
}
