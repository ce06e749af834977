package loader

import (
	"bytes"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gdsload/gdsload/internal/testenv"
	"github.com/gdsload/gdsload/internal/uring"

	"github.com/stretchr/testify/require"
)

// TestReadMany: every range comes back once with the file's bytes and
// ReadAt's io.EOF past the end, for direct and buffered files, in flight
// or one at a time; unaligned ranges, empty ranges and ranges past the
// end included.
func TestReadMany(t *testing.T) {
	size := int64(4<<20 + 123)
	path := writeRandom(t, t.TempDir(), int(size), 9)
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(3, 4))
	ranges := []Range{
		{0, 4096}, {4096, 512}, {size - 100, 4096}, {size, 10}, {size + 4096, 1},
		{12345, 0}, {1 << 20, 300 << 10}, {size - 4096 - 7, 4096 + 7},
		{size - 10, 1 << 50}, // no buffer of a petabyte: only the file's last bytes are read
	}
	for range 300 {
		off := r.Int64N(size)
		if r.IntN(2) == 0 {
			off &^= 4095
		}
		ranges = append(ranges, Range{off, []int64{4096, 1, 777, 65536 + 3}[r.IntN(4)]})
	}
	for _, tc := range []struct {
		name   string
		direct DirectMode
		depth  int
	}{
		{"direct, 32 in flight", DirectAuto, 32},
		{"direct, one at a time", DirectAuto, 1},
		{"direct, deeper than the ranges", DirectAuto, 1000},
		{"buffered", DirectOff, 32},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := OpenFile(path, tc.direct)
			require.NoError(t, err)
			defer f.Close()
			if tc.direct == DirectAuto {
				testenv.NeedDirectIO(t, filepath.Dir(path))
				require.True(t, f.Direct(), f.DirectReason())
				require.Equal(t, uring.Available(), f.ring, "direct files read many ranges through the ring where it is available")
			}
			seen := make([]bool, len(ranges))
			err = f.ReadMany(ranges, tc.depth, func(rr RangeRead) error {
				rg := ranges[rr.Index]
				require.False(t, seen[rr.Index], "range %d handed over twice", rr.Index)
				seen[rr.Index] = true
				end := min(rg.Off+rg.Len, size)
				var wantErr error
				if rg.Off+rg.Len > size && rg.Len > 0 {
					wantErr = io.EOF
				}
				require.ErrorIs(t, rr.Err, wantErr, "range %d %+v", rr.Index, rg)
				if wantErr == nil {
					require.NoError(t, rr.Err)
				}
				if rg.Off < size {
					require.True(t, bytes.Equal(rr.Data, want[rg.Off:end]), "range %d %+v: wrong bytes", rr.Index, rg)
				} else {
					require.Empty(t, rr.Data)
				}
				require.GreaterOrEqual(t, rr.Latency, time.Duration(0))
				return nil
			})
			require.NoError(t, err)
			for i, ok := range seen {
				require.True(t, ok, "range %d never handed over", i)
			}
		})
	}
}

// TestReadManyStops: an error from the callback stops the reads (none is
// handed over after it) and is returned; negative ranges, and ranges whose
// end overflows, are refused before any read.
func TestReadManyStops(t *testing.T) {
	path := writeRandom(t, t.TempDir(), 1<<20, 10)
	for _, direct := range []DirectMode{DirectAuto, DirectOff} {
		f, err := OpenFile(path, direct)
		require.NoError(t, err)
		ranges := make([]Range, 200)
		for i := range ranges {
			ranges[i] = Range{int64(i) * 4096, 4096}
		}
		stop := errors.New("enough")
		calls := 0
		err = f.ReadMany(ranges, 16, func(RangeRead) error {
			calls++
			if calls == 5 {
				return stop
			}
			return nil
		})
		require.ErrorIs(t, err, stop)
		require.Equal(t, 5, calls, "no range is handed over after the callback's error")

		for _, bad := range []Range{{-1, 10}, {0, -1}, {1, math.MaxInt64}} {
			called := false
			err = f.ReadMany([]Range{{0, 10}, bad}, 4, func(RangeRead) error { called = true; return nil })
			require.ErrorContains(t, err, "range 1", "%+v", bad)
			require.False(t, called, "a range %+v is refused before any read", bad)
		}
		require.NoError(t, f.Close())
	}
}

// TestReadManyShrunkFile: a file cut short after it was opened. Ranges
// still inside it come back whole; ranges past its new end, inside the
// size it had when opened, fail with ErrChanged, never as short data
// without an error; in flight or one at a time.
func TestReadManyShrunkFile(t *testing.T) {
	const size, cut = 1 << 20, 300 << 10
	for _, depth := range []int{32, 1} {
		dir := t.TempDir()
		testenv.NeedDirectIO(t, dir)
		path := writeRandom(t, dir, size, 11)
		want, err := os.ReadFile(path)
		require.NoError(t, err)
		f, err := OpenFile(path, DirectAuto)
		require.NoError(t, err)
		require.True(t, f.Direct(), f.DirectReason())
		require.NoError(t, os.Truncate(path, cut))
		ranges := []Range{{0, 4096}, {cut - 4096, 4096}, {cut - 100, 4096}, {cut + 8192, 4096}, {size - 10, 10}}
		seen := 0
		err = f.ReadMany(ranges, depth, func(rr RangeRead) error {
			seen++
			rg := ranges[rr.Index]
			if rg.Off+rg.Len <= cut {
				require.NoError(t, rr.Err, "depth %d, range %+v", depth, rg)
				require.Equal(t, want[rg.Off:rg.Off+rg.Len], rr.Data, "depth %d, range %+v", depth, rg)
				return nil
			}
			require.ErrorIs(t, rr.Err, ErrChanged, "depth %d, range %+v: %d bytes", depth, rg, len(rr.Data))
			require.Less(t, int64(len(rr.Data)), rg.Len, "depth %d, range %+v", depth, rg)
			return nil
		})
		require.NoError(t, err)
		require.Equal(t, len(ranges), seen)
		require.NoError(t, f.Close())
	}
}
