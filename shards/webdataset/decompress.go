package webdataset

import (
	"bytes"
	"errors"
	"fmt"
	"io"

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
type Decompressor struct {
	maxOut    int64
	maxWindow uint64
	zd        *zstd.Decoder
	gz        *gzip.Reader
}

// NewDecompressor returns a Decompressor whose output is capped at maxOut
// bytes (0: DefaultMaxShardBytes) and whose zstd window is capped at
// maxWindow (0: DefaultMaxZstdWindow).
func NewDecompressor(maxOut int64, maxWindow uint64) (*Decompressor, error) {
	if maxOut <= 0 {
		maxOut = DefaultMaxShardBytes
	}
	if maxWindow == 0 {
		maxWindow = DefaultMaxZstdWindow
	}
	zd, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxWindow(maxWindow), zstd.WithDecoderMaxMemory(uint64(maxOut)))
	if err != nil {
		return nil, fmt.Errorf("webdataset: zstd decoder: %w", err)
	}
	return &Decompressor{maxOut: maxOut, maxWindow: maxWindow, zd: zd}, nil
}

// Decompress appends the uncompressed form of src (compressed as c; Auto
// detects it from the magic bytes and name) to dst[:0] and returns it. For
// None it returns src itself. Errors name the shard.
func (d *Decompressor) Decompress(dst, src []byte, c Compression, name string) ([]byte, error) {
	if c == Auto {
		c = DetectCompression(name, src)
	}
	switch c {
	case None:
		return src, nil
	case Zstd:
		out, err := d.zd.DecodeAll(src, dst[:0])
		switch {
		case errors.Is(err, zstd.ErrDecoderSizeExceeded):
			err = fmt.Errorf("%w (cap %d)", ErrShardTooLarge, d.maxOut)
		case errors.Is(err, zstd.ErrWindowSizeExceeded):
			err = fmt.Errorf("%w (window cap %d)", err, min(d.maxWindow, uint64(d.maxOut)))
		}
		if err != nil {
			return nil, fmt.Errorf("webdataset: shard %s: zstd: %w", name, err)
		}
		return out, nil
	case Gzip:
		var err error
		if d.gz == nil {
			d.gz, err = gzip.NewReader(bytes.NewReader(src))
		} else {
			err = d.gz.Reset(bytes.NewReader(src))
		}
		if err != nil {
			return nil, fmt.Errorf("webdataset: shard %s: gzip header: %w", name, err)
		}
		out, err := readCapped(dst[:0], d.gz, d.maxOut)
		if err != nil {
			return nil, fmt.Errorf("webdataset: shard %s: gzip at uncompressed offset %d: %w", name, len(out), err)
		}
		return out, nil
	}
	return nil, fmt.Errorf("webdataset: shard %s: unknown compression %v", name, c)
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
	d.zd.Close()
	if d.gz != nil {
		d.gz.Close()
	}
}
