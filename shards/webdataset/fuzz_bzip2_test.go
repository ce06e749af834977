package webdataset

import (
	"bytes"
	"io"
	"os"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// bzip2Tables bounds what a bzip2 decoder allocates for itself: its
// inverse-BWT table of 4 bytes per byte of a block of at most 900 kB.
const bzip2Tables = 4 << 20

// FuzzDecompressorBzip2 feeds bzip2 streams to the in-memory decoder and
// the streaming Reader: neither panics, the decoder never returns more
// than its cap, no Next call allocates beyond the caps and the decoder's
// bounded tables, and where both accept a stream they read the same
// samples.
func FuzzDecompressorBzip2(f *testing.F) {
	bz, err := os.ReadFile(bzip2Shard)
	require.NoError(f, err)
	f.Add(bz)
	f.Add(bz[:len(bz)/2])
	f.Add([]byte("BZh9"))
	const maxOut = 1 << 20
	d, err := NewDecompressor(maxOut, fuzzWindow)
	require.NoError(f, err)
	defer d.Close()
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := d.Decompress(nil, data, Bzip2, "fuzz.tar.bz2")
		require.False(t, err == nil && len(out) > maxOut, "%d bytes out, cap %d", len(out), maxOut)
		streamed := readBzip2Capped(t, data)
		if err != nil {
			return
		}
		mem, merr := readAll(bytes.NewReader(out), None)
		require.False(t, merr == nil && streamed >= 0 && len(mem) != streamed, "in memory %d samples, streamed %d", len(mem), streamed)
	})
}

// readBzip2Capped streams data's samples with the fuzz caps, checking each
// Next call's allocations; it returns the sample count, or -1 on an error.
func readBzip2Capped(t *testing.T, data []byte) int {
	rd, err := NewReader(bytes.NewReader(data), Bzip2,
		WithMaxMemberBytes(fuzzMember), WithMaxSampleBytes(fuzzSample))
	if err != nil {
		return -1
	}
	defer rd.Close()
	var ms runtime.MemStats
	for n := 0; n < 200; n++ {
		runtime.ReadMemStats(&ms)
		before := ms.TotalAlloc
		s, err := rd.Next()
		runtime.ReadMemStats(&ms)
		grew := ms.TotalAlloc - before
		require.LessOrEqual(t, grew, uint64(fuzzSample+fuzzOverhead+bzip2Tables), "one Next call allocated %d bytes, caps allow %d", grew, fuzzSample+fuzzOverhead+bzip2Tables)
		if err != nil {
			if err == io.EOF {
				return n
			}
			return -1
		}
		require.LessOrEqual(t, s.Size(), int64(fuzzSample), "sample %q has %d bytes, cap %d", s.Key, s.Size(), fuzzSample)
	}
	return -1
}
