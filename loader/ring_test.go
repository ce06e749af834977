package loader

import (
	"context"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// TestRingHandsOutEachBufferOnce checks that the buffers of a Ring all
// reach Span, page aligned and distinct, that Span
// waits while every buffer is out, and that a committed buffer comes back.
func TestRingHandsOutEachBufferOnce(t *testing.T) {
	for _, tc := range []struct {
		count int
		size  int64
	}{{1, 4096}, {3, 8192}, {16, 1 << 20}} {
		r, err := NewRing(tc.count, tc.size)
		require.NoError(t, err)
		seen := map[uintptr]bool{}
		var spans []Span
		for range tc.count {
			s, err := r.Span(context.Background(), 0, tc.size)
			require.NoError(t, err)
			require.Len(t, s.Buf, int(tc.size))
			p := uintptr(unsafe.Pointer(unsafe.SliceData(s.Buf)))
			require.Zero(t, p%4096, "buffer not page aligned")
			require.False(t, seen[p], "buffer handed out twice")
			seen[p] = true
			spans = append(spans, s)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		_, err = r.Span(ctx, 0, tc.size)
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded, "a span while every buffer is out")
		require.NoError(t, spans[0].Commit(context.Background()))
		s, err := r.Span(context.Background(), 0, tc.size)
		require.NoError(t, err)
		require.Equal(t, unsafe.SliceData(spans[0].Buf), unsafe.SliceData(s.Buf), "the committed buffer comes back")
		require.NoError(t, r.Close())
		require.NoError(t, r.Close(), "a second Close")
	}
}

// TestRingReusesTheLastFreedBuffer checks that a Ring hands out the
// buffer freed last: the one likeliest to be in the CPU's cache.
func TestRingReusesTheLastFreedBuffer(t *testing.T) {
	r, err := NewRing(4, 1<<20)
	require.NoError(t, err)
	defer r.Close()
	var spans []Span
	for range 4 {
		s, err := r.Span(context.Background(), 0, 1<<20)
		require.NoError(t, err)
		spans = append(spans, s)
	}
	for _, i := range []int{2, 0, 3} {
		require.NoError(t, spans[i].Commit(context.Background()))
	}
	for _, want := range []int{3, 0, 2} {
		s, err := r.Span(context.Background(), 0, 1<<20)
		require.NoError(t, err)
		require.Equal(t, unsafe.SliceData(spans[want].Buf), unsafe.SliceData(s.Buf), "expected buffer %d, freed later than the others still free", want)
	}
}

// TestRingTouchesOnlyWhatALoadHolds checks that a Ring touches a fresh
// buffer only when none it touched before is free: a load that holds at
// most k buffers at once touches k, however many the ring has.
func TestRingTouchesOnlyWhatALoadHolds(t *testing.T) {
	for _, hold := range []int{1, 3, 8} {
		r, err := NewRing(8, 64<<10)
		require.NoError(t, err)
		require.Zero(t, r.touched(), "a new ring")
		var held []Span
		for range 50 {
			if len(held) == hold {
				require.NoError(t, held[0].Commit(context.Background()))
				held = held[1:]
			}
			s, err := r.Span(context.Background(), 0, 64<<10)
			require.NoError(t, err)
			held = append(held, s)
		}
		require.Equal(t, hold, r.touched(), "buffers touched by a load holding %d at once", hold)
		require.NoError(t, r.Close())
	}
}

// TestRingCloseRightAfterNew closes rings that never handed out a buffer:
// the memory is unmapped, and nothing is left running (goleak, TestMain).
func TestRingCloseRightAfterNew(t *testing.T) {
	for range 20 {
		r, err := NewRing(8, 1<<20)
		require.NoError(t, err)
		require.NoError(t, r.Close())
	}
}
