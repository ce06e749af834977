package webdataset

import (
	"bytes"
	"compress/bzip2"
	"errors"
	"fmt"
	"io"

	"github.com/gdsload/gdsload/internal/libdeflate"
	"github.com/gdsload/gdsload/internal/libzstd"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// DefaultMaxShardBytes caps the decompressed size of one shard in
// Decompressor.
const DefaultMaxShardBytes = 16 << 30

// ErrShardTooLarge reports a shard that decompresses beyond the cap.
var ErrShardTooLarge = errors.New("decompressed shard exceeds the shard size cap")

// Decompressor turns a whole shard held in memory into its uncompressed tar
// bytes, reusing its decoders and the caller's buffers. Pair it with
// Reader.ResetBytes to read samples without copying them. Not safe for
// concurrent use.
//
// zstd is decoded by the system's libzstd where it can be loaded (see
// internal/libzstd: less CPU time than the pure-Go decoder on data that
// compresses well), else by github.com/klauspost/compress/zstd; both
// enforce the same caps and accept the same streams. ZstdDecoder says
// which one this Decompressor uses.
type Decompressor struct {
	maxOut    int64
	maxWindow uint64
	lz        *libzstd.Decoder // nil: the pure-Go decoders below
	lzErr     error            // why lz is nil
	zd        *zstd.Decoder
	zdTrusted *zstd.Decoder // made on first use: skips frame checksums
	gz        *gzip.Reader
	ld        *libdeflate.Decoder // nil: gz
	ldErr     error               // why ld is nil
}

// NewDecompressor returns a Decompressor whose output is capped at maxOut
// bytes (0: DefaultMaxShardBytes) and whose zstd window is capped at
// maxWindow (0: DefaultMaxZstdWindow; libzstd rounds it down to a power
// of two).
func NewDecompressor(maxOut int64, maxWindow uint64) (*Decompressor, error) {
	return newDecompressor(maxOut, maxWindow, true)
}

func newDecompressor(maxOut int64, maxWindow uint64, useLib bool) (*Decompressor, error) {
	if maxOut <= 0 {
		maxOut = DefaultMaxShardBytes
	}
	if maxWindow == 0 {
		maxWindow = DefaultMaxZstdWindow
	}
	d := &Decompressor{maxOut: maxOut, maxWindow: maxWindow, lzErr: errors.New("libzstd not asked for"), ldErr: errors.New("libdeflate not asked for")}
	if useLib {
		d.ld, d.ldErr = libdeflate.NewDecoder()
		d.lz, d.lzErr = libzstd.NewDecoder()
		if d.lzErr == nil {
			return d, nil
		}
	}
	zd, err := d.newZstd(false)
	if err != nil {
		return nil, err
	}
	d.zd = zd
	return d, nil
}

// ZstdDecoder names the zstd decoder in use ("libzstd 1.5.4", or "pure Go"
// with the reason libzstd is not used), for diagnostics.
func (d *Decompressor) ZstdDecoder() string {
	if d.lz != nil {
		v := d.lz.Version()
		return fmt.Sprintf("libzstd %d.%d.%d", v/10000, v/100%100, v%100)
	}
	return fmt.Sprintf("pure Go (%v)", d.lzErr)
}

// GzipDecoder names the gzip decoder in use ("libdeflate", or "pure Go"
// with the reason libdeflate is not used), for diagnostics.
func (d *Decompressor) GzipDecoder() string {
	if d.ld != nil {
		return "libdeflate"
	}
	return fmt.Sprintf("pure Go (%v)", d.ldErr)
}

func (d *Decompressor) newZstd(ignoreChecksum bool) (*zstd.Decoder, error) {
	zd, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.IgnoreChecksum(ignoreChecksum),
		zstd.WithDecoderMaxWindow(d.maxWindow), zstd.WithDecoderMaxMemory(uint64(d.maxOut)))
	if err != nil {
		return nil, fmt.Errorf("zstd decoder: %w", err)
	}
	return zd, nil
}

// Decompress appends the uncompressed form of src (compressed as c; Auto
// detects it from the magic bytes and name) to dst[:0] and returns it. For
// None it returns src itself. Errors name the shard.
func (d *Decompressor) Decompress(dst, src []byte, c Compression, name string) ([]byte, error) {
	return d.decompress(dst, src, c, name, false, nil)
}

// DecompressVerified is Decompress for a shard whose stored bytes were
// just checked against a digest taken by a scan that read the shard to the
// end of its compressed stream (a manifest entry with a CRC32C; see
// ShardEntry), so its zstd frame checksums held then. It skips them, as
// with the same bytes they can only hold again: hashing the output costs
// a noticeable share of decoding data that does not compress, more than
// the CRC-32C of the input does (docs/PERFORMANCE-NOTES.md,
// shards/iterator). Damage is caught by the digest, not here.
func (d *Decompressor) DecompressVerified(dst, src []byte, c Compression, name string) ([]byte, error) {
	return d.decompress(dst, src, c, name, true, nil)
}

// DecompressSummed is DecompressVerified for a shard whose digest is taken
// in the same pass: sum is handed every byte of src, once and in order.
// With libzstd it gets them a cache-sized piece at a time, just before the
// decoder reads that piece, so that the digest costs no pass over memory
// of its own (otherwise it gets all of src first). The frames' checksums
// are skipped: the caller compares the digest with the manifest's before
// it uses the output. If decoding fails, sum has seen all of src all the
// same, so that the caller can tell damaged bytes (a digest that differs)
// from a shard the decoder refuses.
func (d *Decompressor) DecompressSummed(dst, src []byte, c Compression, name string, sum func([]byte)) ([]byte, error) {
	if c == Auto {
		c = DetectCompression(name, src)
	}
	if c != Zstd || d.lz == nil {
		sum(src)
		return d.decompress(dst, src, c, name, true, nil)
	}
	seen := 0
	out, err := d.decompress(dst, src, c, name, true, func(p []byte) { sum(p); seen += len(p) })
	if err != nil {
		sum(src[seen:])
	}
	return out, err
}

// decompress decodes src; onInput, with libzstd only, is handed the input
// as libzstd.Decoder.DecodeAllFunc hands it.
func (d *Decompressor) decompress(dst, src []byte, c Compression, name string, trusted bool, onInput func([]byte)) ([]byte, error) {
	if c == Auto {
		c = DetectCompression(name, src)
	}
	switch c {
	case None:
		return src, nil
	case Zstd:
		if d.lz != nil {
			out, err := d.lz.DecodeAllFunc(dst[:0], src, d.maxWindow, d.maxOut, trusted, onInput)
			if errors.Is(err, libzstd.ErrOutputFull) {
				err = fmt.Errorf("%w (cap %d)", ErrShardTooLarge, d.maxOut)
			}
			if err != nil {
				return nil, fmt.Errorf("shard %s: zstd: %w", name, err)
			}
			return out, nil
		}
		zd := d.zd
		if trusted {
			if d.zdTrusted == nil {
				var err error
				if d.zdTrusted, err = d.newZstd(true); err != nil {
					return nil, err
				}
			}
			zd = d.zdTrusted
		}
		out, err := zd.DecodeAll(src, dst[:0])
		switch {
		case errors.Is(err, zstd.ErrDecoderSizeExceeded):
			err = fmt.Errorf("%w (cap %d)", ErrShardTooLarge, d.maxOut)
		case errors.Is(err, zstd.ErrWindowSizeExceeded):
			err = fmt.Errorf("%w (window cap %d)", err, min(d.maxWindow, uint64(d.maxOut)))
		}
		if err != nil {
			return nil, fmt.Errorf("shard %s: zstd: %w", name, err)
		}
		return out, nil
	case Gzip:
		if d.ld != nil && len(src) > 0 {
			out, err := d.ld.Gunzip(dst, src, d.maxOut)
			if errors.Is(err, libdeflate.ErrOutputFull) {
				return nil, fmt.Errorf("shard %s: gzip: %w (cap %d)", name, ErrShardTooLarge, d.maxOut)
			}
			if err == nil {
				return out, nil
			}
			// Refused: the pure-Go decoder says where and why.
		}
		var err error
		if d.gz == nil {
			d.gz, err = gzip.NewReader(bytes.NewReader(src))
		} else {
			err = d.gz.Reset(bytes.NewReader(src))
		}
		if err != nil {
			return nil, fmt.Errorf("shard %s: gzip header: %w", name, err)
		}
		out, err := readCapped(dst[:0], d.gz, d.maxOut)
		if err != nil {
			return nil, fmt.Errorf("shard %s: gzip at uncompressed offset %d: %w", name, len(out), err)
		}
		return out, nil
	case Bzip2:
		out, err := readCapped(dst[:0], bzip2.NewReader(bytes.NewReader(src)), d.maxOut)
		if err != nil {
			return nil, fmt.Errorf("shard %s: bzip2 at uncompressed offset %d: %w", name, len(out), err)
		}
		return out, nil
	}
	return nil, fmt.Errorf("shard %s: unknown compression %v", name, c)
}

// readCapped appends all of r to dst, failing past max bytes.
func readCapped(dst []byte, r io.Reader, max int64) ([]byte, error) {
	for {
		if len(dst) == cap(dst) {
			dst = append(dst, 0)[:len(dst)]
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if int64(len(dst)) > max {
			return dst, fmt.Errorf("%w (cap %d)", ErrShardTooLarge, max)
		}
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
}

// Close releases the decoders.
func (d *Decompressor) Close() {
	if d.lz != nil {
		d.lz.Close()
	}
	if d.zd != nil {
		d.zd.Close()
	}
	if d.zdTrusted != nil {
		d.zdTrusted.Close()
	}
	if d.gz != nil {
		d.gz.Close()
	}
	if d.ld != nil {
		d.ld.Close()
	}
}
