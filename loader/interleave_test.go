package loader

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// spanLog is a host destination that records the order its spans are
// taken in, as "job:offset".
type spanLog struct {
	*HostBuffer
	name string
	mu   *sync.Mutex
	log  *[]string
}

func (d *spanLog) Span(ctx context.Context, off, n int64) (Span, error) {
	d.mu.Lock()
	*d.log = append(*d.log, fmt.Sprintf("%s:%d", d.name, off))
	d.mu.Unlock()
	return d.HostBuffer.Span(ctx, off, n)
}

// TestLoadInterleave checks the order chunks are handed out in: a window
// of Interleave jobs in turn, sliding on as jobs run out, each job's
// chunks in order, empty jobs skipped; and that the bytes and digests are
// those of a load one job after another.
func TestLoadInterleave(t *testing.T) {
	const chunk = 4096            // the smallest chunk: the alignment
	sizes := []int{3, 1, 0, 2, 2} // in chunks
	tests := []struct {
		interleave int
		want       string
	}{
		{1, "a:0 a:4096 a:8192 b:0 d:0 d:4096 e:0 e:4096"},
		{2, "a:0 b:0 d:0 a:4096 d:4096 e:0 a:8192 e:4096"},
		{3, "a:0 b:0 d:0 e:0 a:4096 d:4096 e:4096 a:8192"},
		{8, "a:0 b:0 d:0 e:0 a:4096 d:4096 e:4096 a:8192"},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.interleave), func(t *testing.T) {
			var mu sync.Mutex
			var log []string
			var jobs []Job
			var dsts [][]byte
			for k, n := range sizes {
				src := bytes.Repeat([]byte{byte('a' + k)}, chunk*n)
				dst := make([]byte, len(src))
				dsts = append(dsts, dst)
				jobs = append(jobs, Job{
					Source: plainSource{bytes.NewReader(src)}, Length: -1,
					Dest: &spanLog{HostBuffer: NewHostBuffer(dst), name: string(rune('a' + k)), mu: &mu, log: &log},
				})
			}
			res, err := Load(context.Background(), jobs, Options{Workers: 1, ChunkSize: chunk, Interleave: tc.interleave, Checksum: ChecksumSHA256})
			require.NoError(t, err)
			require.Equal(t, tc.want, strings.Join(log, " "))
			for k, n := range sizes {
				require.Equal(t, bytes.Repeat([]byte{byte('a' + k)}, chunk*n), dsts[k])
				require.Equal(t, sha256hex(bytes.Repeat([]byte{byte('a' + k)}, chunk*n)), res.Files[k].Digest(ChecksumSHA256))
			}
		})
	}
}

// gatedCommit is a host destination whose spans' commits of offset 0
// wait for a gate, recording the order of commits.
type gatedCommit struct {
	*HostBuffer
	gate      chan struct{}
	committed chan int64
}

func (d *gatedCommit) Span(ctx context.Context, off, n int64) (Span, error) {
	s, err := d.HostBuffer.Span(ctx, off, n)
	s.Commit = func(context.Context) error {
		if off == 0 {
			<-d.gate
		}
		d.committed <- off
		return nil
	}
	return s, err
}

// TestOrderedHasherNeverWaits checks that a worker landing a chunk while
// another worker hashes the job returns at once, and that the hashing
// worker then commits that chunk in order.
func TestOrderedHasherNeverWaits(t *testing.T) {
	d := &gatedCommit{HostBuffer: NewHostBuffer(make([]byte, 8)), gate: make(chan struct{}), committed: make(chan int64, 2)}
	h := newOrderedHasher(ChecksumSHA256, d)
	ctx := context.Background()
	s0, _ := d.Span(ctx, 0, 4)
	s1, _ := d.Span(ctx, 4, 4)
	first := make(chan error, 1)
	go func() { first <- h.land(ctx, 0, s0) }() // hashes, then waits in the commit
	// The second chunk lands while the first one's commit waits: its
	// worker must not wait for the hashing worker.
	deadline := time.Now().Add(10 * time.Second)
	for {
		h.mu.Lock()
		busy := h.hashing
		h.mu.Unlock()
		if busy {
			break
		}
		require.True(t, time.Now().Before(deadline), "the first land never started hashing")
		time.Sleep(time.Millisecond)
	}
	second := make(chan error, 1)
	go func() { second <- h.land(ctx, 1, s1) }()
	select {
	case err := <-second:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("land of a later chunk waited for the worker hashing the job")
	}
	close(d.gate)
	require.NoError(t, <-first)
	require.Equal(t, int64(0), <-d.committed)
	require.Equal(t, int64(4), <-d.committed)
	require.Equal(t, sha256hex(make([]byte, 8)), h.digest())
}
