package loader

import (
	"context"
	"io"
	"os"
	"testing"
)

// The benchmarks read one warm 64 MiB file: the loader into its ring against
// a plain read loop over the same file, so `go test -bench` shows the two
// side by side (compare with benchstat). Cold-cache figures against fio are
// the job of scripts/bench-vs-fio.sh.

func benchFile(b *testing.B) string {
	b.Helper()
	return writeRandom(b, b.TempDir(), 64<<20, 42)
}

func BenchmarkLoadRing(b *testing.B) {
	for _, mode := range []DirectMode{DirectOff, DirectOn} {
		b.Run("direct="+mode.String(), func(b *testing.B) {
			path := benchFile(b)
			f, err := OpenFile(path, mode)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			ring, err := NewRing(2*DefaultWorkers, DefaultChunkSize)
			if err != nil {
				b.Fatal(err)
			}
			defer ring.Close()
			b.SetBytes(f.Size())
			for b.Loop() {
				if _, err := Load(context.Background(), []Job{WholeFile(f, ring)}, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkPOSIXReadLoop(b *testing.B) {
	path := benchFile(b)
	buf := make([]byte, 1<<20)
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	for b.Loop() {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{f}, buf); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}
