package webdataset

import (
	"bytes"
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
	}
	return fmt.Sprintf("compression(%d)", int(c))
}

var (
	gzipMagic = []byte{0x1f, 0x8b}
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
)

// CompressionFromName guesses a shard's compression from its file name:
// ".tar.gz" and ".tgz" are Gzip, ".tar.zst", ".tar.zstd" and ".tzst" are
// Zstd, anything else is None.
func CompressionFromName(name string) Compression {
	n := strings.ToLower(name)
	switch {
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
	case len(head) >= len(zstdMagic):
		return None
	}
	return CompressionFromName(name)
}

// IsShardName reports whether name looks like a WebDataset shard: a ".tar"
// file, optionally compressed with gzip or zstd.
func IsShardName(name string) bool {
	n := strings.ToLower(name)
	for _, s := range []string{".tar", ".tar.gz", ".tgz", ".tar.zst", ".tar.zstd", ".tzst"} {
		if strings.HasSuffix(n, s) {
			return true
		}
	}
	return false
}
