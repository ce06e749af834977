package loader

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// prefSource is an in-memory Source that prefers chunks of pref bytes (0:
// no preference, no ChunkSizer).
type prefSource struct {
	*bytes.Reader
	pref int64
}

func (s prefSource) Name() string { return fmt.Sprintf("mem-pref-%d", s.pref) }

type plainSource struct{ *bytes.Reader }

func (plainSource) Name() string { return "mem" }

func (s prefSource) PreferredChunkSize() int64 { return s.pref }

func memSource(n int, pref int64) Source {
	r := bytes.NewReader(bytes.Repeat([]byte{7}, n))
	if pref == 0 {
		return plainSource{r}
	}
	return prefSource{r, pref}
}

// TestChunkSizeFollowsTheSources checks the chunk size of a load that asks
// for none: the largest the sources prefer (ChunkSizer), at least
// DefaultChunkSize and at most MaxChunkSize, but no larger than a Ring's
// buffers; a size asked for wins. The count of chunks shows the size used.
func TestChunkSizeFollowsTheSources(t *testing.T) {
	const n = 32 << 20
	for _, tc := range []struct {
		name        string
		prefs       []int64
		asked, ring int64
		wantEff     int64 // EffectiveChunkSize(asked, sources)
		wantChunks  int   // chunks of the load into a ring of ring-byte buffers
	}{
		{"no preference", []int64{0}, 0, 16 << 20, DefaultChunkSize, 8},
		{"prefers 8 MiB", []int64{8 << 20}, 0, 16 << 20, 8 << 20, 4},
		{"the largest preference", []int64{0, 8 << 20, 16 << 20}, 0, 16 << 20, 16 << 20, 3 * 2},
		{"a smaller preference keeps the default", []int64{1 << 20}, 0, 16 << 20, DefaultChunkSize, 8},
		{"capped at MaxChunkSize", []int64{4 * MaxChunkSize}, 0, 16 << 20, MaxChunkSize, 2},
		{"a ring's buffers cap it", []int64{8 << 20}, 0, 4 << 20, 8 << 20, 8},
		{"asked for wins", []int64{8 << 20}, 2 << 20, 4 << 20, 2 << 20, 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var srcs []Source
			for _, p := range tc.prefs {
				srcs = append(srcs, memSource(n, p))
			}
			require.Equal(t, tc.wantEff, EffectiveChunkSize(tc.asked, srcs))
			ring, err := NewRing(4, tc.ring)
			require.NoError(t, err)
			defer ring.Close()
			var jobs []Job
			for _, s := range srcs {
				jobs = append(jobs, Job{Source: s, Length: n, Dest: ring})
			}
			res, err := Load(context.Background(), jobs, Options{Workers: 2, ChunkSize: tc.asked})
			require.NoError(t, err)
			require.Equal(t, tc.wantChunks, res.Chunks)
			require.Equal(t, int64(n*len(srcs)), res.Bytes)
		})
	}
}
