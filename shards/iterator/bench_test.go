package iterator

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"
)

// benchDataset writes zstd shards of word-salad text samples (compressing
// about 3x, like text corpora) and returns the dataset and its sample bytes.
func benchDataset(b *testing.B, shards, perShard int) (*Dataset, int64) {
	b.Helper()
	dir := b.TempDir()
	rnd := rand.New(rand.NewPCG(1, 1))
	words := make([]string, 4000)
	for i := range words {
		w := make([]byte, 2+rnd.IntN(8))
		for j := range w {
			w[j] = byte('a' + rnd.IntN(26))
		}
		words[i] = string(w)
	}
	enc, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault))
	var total int64
	for s := range shards {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		var used int
		for i := 0; used < perShard; i++ {
			var sb strings.Builder
			for range 300 + rnd.IntN(4000) {
				sb.WriteString(words[rnd.IntN(len(words))])
				sb.WriteByte(' ')
			}
			text := sb.String()
			key := fmt.Sprintf("s%04d-%06d", s, i)
			tw.WriteHeader(&tar.Header{Name: key + ".txt", Mode: 0o644, Size: int64(len(text))})
			io.WriteString(tw, text)
			used += len(text)
		}
		tw.Close()
		total += int64(used)
		require.NoError(b, os.WriteFile(filepath.Join(dir, fmt.Sprintf("shard-%04d.tar.zst", s)), enc.EncodeAll(buf.Bytes(), nil), 0o644))
	}
	ds, err := Open(context.Background(), dir)
	require.NoError(b, err)
	return ds, total
}

// BenchmarkIterate reports sample throughput for 1 and 2 decode workers;
// scripts/bench-iterate.sh compares the CLI against zstd -d -T1.
func BenchmarkIterate(b *testing.B) {
	ds, total := benchDataset(b, 8, 6<<20)
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			b.SetBytes(total)
			for range b.N {
				it, err := New(ds, Options{Workers: workers})
				require.NoError(b, err)
				for {
					_, err := it.Next(context.Background())
					if err == io.EOF {
						break
					}
					require.NoError(b, err)
				}
				it.Close()
			}
		})
	}
}
