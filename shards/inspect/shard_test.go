package inspect

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/gdsload/gdsload/vfs"
	"github.com/stretchr/testify/require"
)

// TestCorruptGzipShardFails: inspecting a .tar.gz whose gzip CRC-32 does
// not match its contents fails ("gdsload inspect flip.tar.gz" once
// exited 0). The payload is stored, not deflated, so the
// flipped byte changes a payload byte and only the trailer tells.
func TestCorruptGzipShardFails(t *testing.T) {
	payload := make([]byte, 64<<10)
	rng := rand.New(rand.NewPCG(16, 1))
	for i := range payload {
		payload[i] = byte(rng.Uint32())
	}
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	for _, m := range []struct {
		name string
		data []byte
	}{{"a.jpg", payload}, {"a.cls", []byte("1")}} {
		tw.WriteHeader(&tar.Header{Name: m.name, Mode: 0o644, Size: int64(len(m.data))})
		tw.Write(m.data)
	}
	tw.Close()
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.NoCompression)
	zw.Write(tb.Bytes())
	zw.Close()
	m, err := vfs.New()
	require.NoError(t, err)
	defer m.Close()
	dir := t.TempDir()
	good := filepath.Join(dir, "good.tar.gz")
	os.WriteFile(good, gz.Bytes(), 0o644)
	_, err = File(context.Background(), good, Options{FS: m})
	require.NoError(t, err, "intact shard")
	flipped := bytes.Clone(gz.Bytes())
	flipped[len(flipped)/3] ^= 0x55 // inside the payload
	bad := filepath.Join(dir, "flip.tar.gz")
	os.WriteFile(bad, flipped, 0o644)
	rep, err := File(context.Background(), bad, Options{FS: m})
	require.Error(t, err, "corrupt shard inspected without an error: %v", rep)
}
