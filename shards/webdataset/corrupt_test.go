package webdataset

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// corruptShard writes a shard with GNU tar, compresses it with the tool's
// CLI and flips the byte in the middle of the compressed file, as issue
// 16 did. The payload is random (stored or raw blocks: the flip changes a
// payload byte without breaking the compressed structure) and large, so the
// middle falls in it, not in a tar header. It checks that the tool's own
// test mode ("gzip -t", "zstd -t") refuses the result, and returns it.
func corruptShard(t *testing.T, tool string) []byte {
	t.Helper()
	payload := make([]byte, 128<<10)
	rng := rand.New(rand.NewPCG(16, 1))
	for i := range payload {
		payload[i] = byte(rng.Uint32())
	}
	ms := []tmember{
		{Name: "a.cls", Data: []byte("1")},
		{Name: "a.jpg", Data: payload},
		{Name: "b.cls", Data: []byte("2")},
	}
	comp := compressWith(t, tool, gnuTar(t, "ustar", ms))
	comp[len(comp)/2] ^= 0x55
	p := filepath.Join(t.TempDir(), "flip")
	require.NoError(t, os.WriteFile(p, comp, 0o644))
	out, err := exec.Command(tool, "-t", p).CombinedOutput()
	require.Error(t, err, "%s -t accepts the flipped file, so it tests nothing: %s", tool, out)
	return comp
}

// TestCorruptCompressedShardFails: a compressed shard whose checksum
// (gzip's CRC-32 trailer, zstd's frame checksum) does not match its
// contents fails inspection (Reader) and scanning (ScanShard, so manifest
// and Open), not only iteration (once, only iteration failed).
func TestCorruptCompressedShardFails(t *testing.T) {
	for _, c := range []struct{ tool, name string }{{"gzip", "flip.tar.gz"}, {"zstd", "flip.tar.zst"}} {
		t.Run(c.tool, func(t *testing.T) {
			data := corruptShard(t, c.tool)
			// What inspect does: read every sample to the end.
			_, err := readAll(bytes.NewReader(data), Auto, WithName(c.name))
			if assert.Error(t, err, "Reader read every sample of the corrupt shard without an error") {
				var e *Error
				if assert.ErrorAs(t, err, &e, "Reader error %v does not name the shard", err) {
					assert.Equal(t, c.name, e.Shard, "Reader error %v does not name the shard", err)
				}
			}
			// Skipping samples (what counting does) fails as well.
			rd, err := NewReader(bytes.NewReader(data), Auto, WithName(c.name))
			require.NoError(t, err)
			for err == nil {
				_, _, err = rd.Skip()
			}
			assert.NotEqual(t, io.EOF, err, "Skip reached the end of the corrupt shard without an error")
			rd.Close()
			p := filepath.Join(t.TempDir(), c.name)
			require.NoError(t, os.WriteFile(p, data, 0o644))
			e, err := ScanShard(context.Background(), p)
			assert.Error(t, err, "ScanShard accepted the corrupt shard: %+v", e)
			m, err := BuildManifest(context.Background(), filepath.Dir(p))
			assert.Error(t, err, "BuildManifest accepted the corrupt shard: %+v", m)
			// And the whole-shard path of the iterator, which already failed.
			d, err := NewDecompressor(0, 0)
			require.NoError(t, err)
			defer d.Close()
			_, err = d.Decompress(nil, data, Auto, c.name)
			assert.Error(t, err, "Decompressor accepted the corrupt shard")
		})
	}
}

// TestIntactShardReadsToTheEnd: reading to the end of the compressed
// stream accepts what the tools write, including GNU tar's record padding
// after the end-of-archive blocks and concatenated gzip members.
func TestIntactShardReadsToTheEnd(t *testing.T) {
	ms := testMembers(false)
	plain := gnuTar(t, "gnu", ms)
	gz := compressWith(t, "gzip", plain)
	for _, c := range []struct {
		name string
		data []byte
	}{
		{"s.tar", plain},
		{"s.tar.gz", gz},
		{"s.tar.zst", compressWith(t, "zstd", plain)},
		// gzip concatenates members; the tar ends inside the second.
		{"two.tar.gz", append(compressWith(t, "gzip", plain[:1024]), compressWith(t, "gzip", plain[1024:])...)},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := readAll(bytes.NewReader(c.data), Auto, WithName(c.name))
			require.NoError(t, err)
			equalSamples(t, got, expectSamples(ms))
			e, err := ScanShardReader(context.Background(), bytes.NewReader(c.data), c.name)
			require.NoError(t, err, "ScanShardReader: %+v, %v", e, err)
			require.EqualValues(t, int64(len(got)), e.Samples, "ScanShardReader: %+v, %v", e, err)
			require.EqualValues(t, int64(len(c.data)), e.Bytes, "ScanShardReader: %+v, %v", e, err)
		})
	}
}
