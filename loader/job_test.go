package loader

import (
	"testing"

	"github.com/stretchr/testify/require"
)

type sizedSource struct{ size int64 }

func (s sizedSource) Name() string                          { return "sized" }
func (s sizedSource) Size() int64                           { return s.size }
func (s sizedSource) ReadAt(p []byte, _ int64) (int, error) { return len(p), nil }

func TestPlanChunks(t *testing.T) {
	const chunk, align = 16384, 4096
	for _, tc := range []struct {
		name        string
		off, length int64
		want        [][2]int64 // offset, length
	}{
		{"empty", 0, 0, nil},
		{"aligned", 0, 40000, [][2]int64{{0, 16384}, {16384, 16384}, {32768, 7232}}},
		{"unaligned head reaches the next boundary only", 100, 20000, [][2]int64{{100, 3996}, {4096, 16004}}},
		{"unaligned head, long", 5000, 40000, [][2]int64{{5000, 3192}, {8192, 16384}, {24576, 16384}, {40960, 4040}}},
		{"aligned start mid-file", 8192, 16384, [][2]int64{{8192, 16384}}},
		{"tiny unaligned", 10, 5, [][2]int64{{10, 5}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := newPlan(0, Job{Source: sizedSource{1 << 20}, Offset: tc.off, Length: tc.length, Dest: NewHostBuffer(make([]byte, 1<<20))}, chunk, align)
			require.NoError(t, err)
			var got [][2]int64
			for i := range p.nChunks {
				off, n := p.chunkAt(i)
				got = append(got, [2]int64{off, n})
				if i > 0 {
					require.Zero(t, off%align, "chunk %d starts aligned", i)
				}
			}
			require.Equal(t, tc.want, got)
		})
	}
}
