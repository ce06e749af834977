package webdataset

import (
	"bufio"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"

	"github.com/gdsload/gdsload/internal/crc32c"
	"github.com/gdsload/gdsload/internal/humanize"

	"github.com/gdsload/gdsload/vfs"
)

// ReadManifestAt reads and validates the manifest at p, a path or URL
// (rdmafs://, s3://) read through m: the manifest file, or the directory
// holding index.json.
func ReadManifestAt(ctx context.Context, m *vfs.Mux, p string) (*Manifest, error) {
	if fi, err := m.Stat(ctx, p); err == nil && fi.IsDir() {
		p = vfs.Join(p, ManifestName)
	}
	b, err := m.ReadFile(ctx, p, MaxManifestBytes)
	if err != nil {
		return nil, fmt.Errorf("webdataset: reading manifest: %w", err)
	}
	return DecodeManifest(b, p)
}

// VerifyShardsAt checks every shard man lists, beside it in dir (a local
// path or a URL, read through m), for size, SHA-256 and, where the entry
// has one, CRC-32C, reading each once in large sequential reads and
// calling onProgress, if set, with each shard's bytes once checked. The
// error names every shard that differs or cannot be read; cancelling ctx
// stops between shards.
func VerifyShardsAt(ctx context.Context, m *vfs.Mux, dir string, man *Manifest, onProgress func(int64)) error {
	var errs []error
	for _, e := range man.Shards {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := verifyShardAt(ctx, m, vfs.Join(dir, e.Name), e); err != nil {
			errs = append(errs, err)
		}
		if onProgress != nil {
			onProgress(e.Bytes)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%d of %s in %s differ from the manifest:\n%w", len(errs), humanize.Count(len(man.Shards), "shard"), dir, err)
	}
	return nil
}

func verifyShardAt(ctx context.Context, m *vfs.Mux, u string, e ShardEntry) error {
	f, err := m.Open(ctx, u)
	if err != nil {
		return fmt.Errorf("webdataset: verifying shard %s: %w", e.Name, err)
	}
	defer f.Close()
	if f.Size() != e.Bytes {
		return fmt.Errorf("webdataset: shard %s (%s): %w: %d bytes stored, %d in manifest", e.Name, u, ErrShardSize, f.Size(), e.Bytes)
	}
	h, crc := sha256.New(), crc32c.New()
	// 8 MiB reads: a remote file reads each over its connections at once.
	if _, err := io.Copy(io.MultiWriter(h, crc), bufio.NewReaderSize(vfs.NewReader(ctx, f), 8<<20)); err != nil {
		return fmt.Errorf("webdataset: verifying shard %s (%s): %w", e.Name, u, err)
	}
	if err := checkSum(e, h.Sum(nil)); err != nil {
		return err
	}
	return checkCRC(e, crc.Sum32())
}

// Bytes is the stored size of every shard listed.
func (m *Manifest) Bytes() int64 {
	var n int64
	for _, e := range m.Shards {
		n += e.Bytes
	}
	return n
}
