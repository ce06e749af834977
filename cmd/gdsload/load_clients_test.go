package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gdsload/gdsload/rdmafs"
)

// peakRSS reads a process's high-water resident set from /proc.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}

// 64 clients, each on its own connections, read random ranges of several
// files from one real server process and verify every byte; the server's
// memory stays bounded by its buffer pool, whatever they ask.
func TestManyClientsAgainstServerProcess(t *testing.T) {
	root := t.TempDir()
	files := map[string][]byte{}
	for i, n := range []int{8<<20 + 3, 3 << 20, 1<<20 + 4097, 65537} {
		name := fmt.Sprintf("f%d.bin", i)
		p, _ := writeFile(t, root, name, n)
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		files[filepath.Base(p)] = b
	}
	const token = "s3cret-token-0123456789abcdef"
	addr, proc := startServerProcess(t, root, token)
	before := peakRSS(t, proc.Pid)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	names := []string{"f0.bin", "f1.bin", "f2.bin", "f3.bin"}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for c := range 64 {
		wg.Go(func() {
			cl, err := rdmafs.Dial(ctx, addr, rdmafs.WithToken([]byte(token)), rdmafs.WithConnections(1))
			if err != nil {
				errs <- err
				return
			}
			defer cl.Close()
			r := rand.New(rand.NewPCG(uint64(c), 7))
			buf := make([]byte, 2<<20)
			for range 12 {
				name := names[r.IntN(len(names))]
				want := files[name]
				f, err := cl.Open(ctx, name)
				if err != nil {
					errs <- err
					return
				}
				off := r.Int64N(int64(len(want)))
				n := min(int64(len(want))-off, 1+r.Int64N(int64(len(buf))))
				got, err := f.ReadAt(buf[:n], off)
				if err != nil || !bytes.Equal(buf[:got], want[off:off+n]) {
					errs <- fmt.Errorf("client %d: %s [%d, +%d): %d bytes, err %v, equal %v", c, name, off, n, got, err, bytes.Equal(buf[:got], want[off:off+int64(got)]))
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	peak := peakRSS(t, proc.Pid)
	t.Logf("server peak RSS: %.1f MiB before the clients, %.1f MiB after 64 clients x 12 verified random reads", float64(before)/(1<<20), float64(peak)/(1<<20))
	// 64 pool buffers of 1 MiB (serve's defaults) plus the Go runtime.
	require.Less(t, peak, int64(192<<20), "server memory bounded by its pool")
}
