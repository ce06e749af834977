package objstore_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gdsload/gdsload/objstore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cpuTime is the user and system CPU time of this process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRead reads a 256 MiB object from loopback MinIO the way a load
// does: W workers, each reading one range at a time into its own reused
// buffer, for range sizes and worker counts around the defaults. The
// defaults in options.go come from this (docs/S3.md, "Tuning").
func BenchmarkRead(b *testing.B) {
	const size = 256 << 20
	mc := sharedCluster(b, 1)
	bucket := "bench-read"
	require.NoError(b, mc.MakeBucket(context.Background(), bucket))
	_, err := mc.Put(context.Background(), bucket, "obj", testData(size, 1))
	require.NoError(b, err)
	for _, rs := range []int64{1 << 20, 4 << 20, 8 << 20, 16 << 20, 32 << 20} {
		for _, w := range []int{4, 8, 16, 32} {
			b.Run(fmt.Sprintf("range=%dMiB/workers=%d", rs>>20, w), func(b *testing.B) {
				cl := client(b, mc.Endpoint(), objstore.WithRangeSize(rs), objstore.WithConcurrency(w))
				o, err := cl.Open(context.Background(), bucket, "obj")
				require.NoError(b, err)
				bufs := make([][]byte, w)
				for i := range bufs {
					bufs[i] = make([]byte, rs)
				}
				b.SetBytes(size)
				cpu0 := cpuTime()
				b.ResetTimer()
				for range b.N {
					var next atomic.Int64
					var wg sync.WaitGroup
					for i := range w {
						wg.Go(func() {
							for {
								off := next.Add(rs) - rs
								if off >= size {
									return
								}
								if _, err := o.ReadAt(bufs[i][:min(rs, size-off)], off); !assert.NoError(b, err) {
									return
								}
							}
						})
					}
					wg.Wait()
				}
				b.StopTimer()
				// The client's CPU only: MinIO is another process.
				b.ReportMetric((cpuTime()-cpu0).Seconds()/(float64(b.N)*size/(1<<30)), "cpu-s/GiB")
			})
		}
	}
}
