package webdataset

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// Compression names how a shard's tar stream is compressed.
type Compression int

const (
	// Auto asks NewReader to detect the compression from the stream's first
	// bytes.
	Auto Compression = iota
	// None is a plain tar stream.
	None
	// Gzip is a gzip (RFC 1952) stream, possibly multi-member.
	Gzip
	// Zstd is a Zstandard frame stream.
	Zstd
	// Bzip2 is a bzip2 stream, possibly several concatenated.
	Bzip2
)

// String returns the compression's name as used in messages.
func (c Compression) String() string {
	switch c {
	case Auto:
		return "auto"
	case None:
		return "none"
	case Gzip:
		return "gzip"
	case Zstd:
		return "zstd"
	case Bzip2:
		return "bzip2"
	}
	return fmt.Sprintf("compression(%d)", int(c))
}

var (
	gzipMagic = []byte{0x1f, 0x8b}
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
	bzipMagic = []byte("BZh")
)

// isBzip2 reports whether head starts a bzip2 stream: "BZh" and a block
// size digit.
func isBzip2(head []byte) bool {
	return len(head) >= 4 && bytes.HasPrefix(head, bzipMagic) && head[3] >= '1' && head[3] <= '9'
}

// CompressionFromName guesses a shard's compression from its file name:
// ".tar.gz" and ".tgz" are Gzip, ".tar.zst", ".tar.zstd" and ".tzst" are
// Zstd, ".tar.bz2", ".tbz2" and ".tbz" are Bzip2, anything else is None.
func CompressionFromName(name string) Compression {
	n := strings.ToLower(name)
	switch {
	case strings.HasSuffix(n, ".bz2"), strings.HasSuffix(n, ".tbz2"), strings.HasSuffix(n, ".tbz"):
		return Bzip2
	case strings.HasSuffix(n, ".gz"), strings.HasSuffix(n, ".tgz"):
		return Gzip
	case strings.HasSuffix(n, ".zst"), strings.HasSuffix(n, ".zstd"), strings.HasSuffix(n, ".tzst"):
		return Zstd
	}
	return None
}

// DetectCompression decides a shard's compression. Magic bytes win when head
// holds at least four bytes, since a misnamed file is still read correctly;
// with a shorter head the file name decides.
func DetectCompression(name string, head []byte) Compression {
	switch {
	case bytes.HasPrefix(head, zstdMagic):
		return Zstd
	case bytes.HasPrefix(head, gzipMagic):
		return Gzip
	case isBzip2(head):
		return Bzip2
	case len(head) >= len(zstdMagic):
		return None
	}
	return CompressionFromName(name)
}

// ShardPatterns names the shard files IsShardName accepts, for messages.
const ShardPatterns = "*.tar, *.tar.gz, *.tgz, *.tar.zst, *.tar.bz2"

// IsShardName reports whether name looks like a WebDataset shard: a ".tar"
// file, optionally compressed with gzip, zstd or bzip2.
func IsShardName(name string) bool {
	n := strings.ToLower(name)
	for _, s := range []string{".tar", ".tar.gz", ".tgz", ".tar.zst", ".tar.zstd", ".tzst", ".tar.bz2", ".tbz2", ".tbz"} {
		if strings.HasSuffix(n, s) {
			return true
		}
	}
	return false
}

// unreadSuffixes are tar shards compressed in a way this package does not
// read, with the reason. xz and lzma streams name their dictionary size in
// their headers (up to 4 GiB), which a decoder must allocate: a shard of a
// few bytes could claim gigabytes, so they are refused rather than read
// with an uncapped decoder.
var unreadSuffixes = []struct{ suffix, reason string }{
	{".tar.xz", "xz"}, {".txz", "xz"}, {".tar.lzma", "lzma"}, {".tlz", "lzma"},
	{".tar.lz4", "lz4"}, {".tar.lz", "lzip"}, {".tar.br", "brotli"}, {".tar.z", "compress (.Z)"},
}

// UnreadShard reports whether name is a tar shard compressed in a way that
// this package does not read (xz, lzma, lz4, lzip, brotli, .Z), and how,
// so that a listing can refuse it by name instead of leaving it out
// silently.
func UnreadShard(name string) (compression string, ok bool) {
	n := strings.ToLower(name)
	for _, u := range unreadSuffixes {
		if strings.HasSuffix(n, u.suffix) {
			return u.reason, true
		}
	}
	return "", false
}

// ErrUnreadShards reports shards compressed in a way this package does not
// read (see UnreadShard).
var ErrUnreadShards = errors.New("shards compressed in a way that is not read")

// unreadShardsError names the shards UnreadShard refuses.
func unreadShardsError(where string, names, how []string) error {
	list := make([]string, len(names))
	for i := range names {
		list[i] = fmt.Sprintf("%s (%s)", names[i], how[i])
	}
	return fmt.Errorf("%s holds %d %w: %s; the readable ones are %s: recompress them (xz -dc s.tar.xz | zstd -o s.tar.zst) or move them out of the folder",
		where, len(names), ErrUnreadShards, strings.Join(list, ", "), ShardPatterns)
}
