package iterator

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// BenchmarkStoredShardCopy is the memory traffic of iterating a shard
// whose payloads zstd only stored (JPEG-like samples), without the decode
// around it: a 32 MiB shard mapped from the page cache is copied into a
// reused shard buffer, as the iterator's whole-shard decode does. Run with
// -cpu 1,2: each goroutine of b.RunParallel has its own file and buffer,
// and the MB/s at 2 CPUs over the MB/s at 1 CPU is how far that copy
// scales on two cores (scripts/bench-iterate.sh compares 2 workers against
// 1, and zstd on two cores against one).
func BenchmarkStoredShardCopy(b *testing.B) {
	const size = 32 << 20
	dir := b.TempDir()
	data := make([]byte, size)
	_, err := rand.Read(data)
	require.NoError(b, err)
	var files []*os.File
	for i := range 4 {
		path := filepath.Join(dir, fmt.Sprintf("shard-%d", i))
		require.NoError(b, os.WriteFile(path, data, 0o644))
		f, err := os.Open(path)
		require.NoError(b, err)
		defer f.Close()
		files = append(files, f)
	}
	b.Run("whole", func(b *testing.B) {
		b.SetBytes(size)
		var next atomic.Int32
		b.RunParallel(func(pb *testing.PB) {
			f := files[int(next.Add(1)-1)%len(files)]
			m, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED|unix.MAP_POPULATE)
			if !assert.NoError(b, err) {
				return
			}
			defer unix.Munmap(m)
			buf := shardBuffer(size + 4<<20)
			for pb.Next() {
				copy(buf[:size], m)
			}
		})
	})
}
