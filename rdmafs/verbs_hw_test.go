package rdmafs

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tests of the verbs transport on real RDMA: a NIC, or rdma_rxe / siw over
// a network interface (scripts/rdma-check.sh sets one up). They run when
// GDSLOAD_RDMA_ADDR names an IP address of that interface, and skip
// otherwise: no machine this project's CI runs on has RDMA.
// GDSLOAD_RDMA_ADDR=loopback runs them over the loopback fabric instead,
// to try the tests themselves (the killed-client test needs a second
// process and skips).
const hwAddrEnv = "GDSLOAD_RDMA_ADDR"

func hwAddr(t *testing.T) string {
	t.Helper()
	a := os.Getenv(hwAddrEnv)
	if a == "" {
		t.Skipf("no RDMA hardware: set %s to an address of an RDMA-capable interface (scripts/rdma-check.sh)", hwAddrEnv)
	}
	return a
}

// hwServer runs a server over verbs on the RDMA address; it returns the
// transport and its rdmaStack too.
func hwServer(t *testing.T, cfg serverConfig) (*testServer, Transport, rdmaStack) {
	t.Helper()
	addr := hwAddr(t)
	if addr == "loopback" {
		lb := newLoopback()
		return startServer(t, cfg, lb), lb, lb.fab
	}
	tr, err := Verbs()
	require.NoError(t, err, "%s is set but verbs is unavailable: %v", hwAddrEnv, err)
	return startServerOn(t, cfg, tr, net.JoinHostPort(addr, "0")), tr, tr.(*verbsTransport).stack
}

// The data path end to end over verbs, CRC on and off: sizes around the
// pool buffer size and the chunk size, pipelined over several connections.
func TestVerbsHWEndToEnd(t *testing.T) {
	ts, tr, _ := hwServer(t, serverConfig{})
	sizes := []int{0, 1, 4095, 4096, 256<<10 - 1, 256 << 10, 1<<20 + 3, 9<<20 + 17}
	files := map[int][]byte{}
	for _, n := range sizes {
		files[n] = writeFile(t, ts.root, fmt.Sprintf("d/f%d", n), n, uint64(n)+1)
	}
	for _, crc := range []bool{true, false} {
		t.Run(fmt.Sprintf("crc=%v", crc), func(t *testing.T) {
			cl := dialTest(t, ts, tr, WithCRC(crc), WithConnections(4), WithChunkSize(1<<20))
			ents, err := cl.List(context.Background(), "d")
			require.NoError(t, err, "List: %d entries, %v", len(ents), err)
			require.Len(t, ents, len(sizes), "List: %d entries, %v", len(ents), err)
			var wg sync.WaitGroup
			for _, n := range sizes {
				wg.Go(func() {
					f, err := cl.Open(context.Background(), fmt.Sprintf("d/f%d", n))
					if !assert.NoError(t, err) {
						return
					}
					got := make([]byte, n)
					k, err := f.ReadAt(got, 0)
					assert.Equal(t, n, k, "size %d: read %d, %v, equal %v", n, k, err, bytes.Equal(got, files[n]))
					assert.False(t, err != nil && n > 0, "size %d: read %d, %v, equal %v", n, k, err, bytes.Equal(got, files[n]))
					assert.True(t, bytes.Equal(got, files[n]), "size %d: read %d, %v, equal %v", n, k, err, bytes.Equal(got, files[n]))
				})
			}
			wg.Wait()
		})
	}
}

// 64 connections of one client, all reading at once.
func TestVerbsHW64Connections(t *testing.T) {
	ts, tr, _ := hwServer(t, serverConfig{})
	data := writeFile(t, ts.root, "big", 64<<20, 3)
	cl := dialTest(t, ts, tr, WithConnections(64), WithChunkSize(1<<20))
	f, err := cl.Open(context.Background(), "big")
	require.NoError(t, err)
	got := make([]byte, len(data))
	n, err := f.ReadAt(got, 0)
	require.Len(t, data, n, "ReadAt over 64 connections: %d, %v", n, err)
	require.NoError(t, err, "ReadAt over 64 connections: %d, %v", n, err)
	require.True(t, bytes.Equal(got, data), "ReadAt over 64 connections: %d, %v", n, err)
}

// A flood of queue pairs with no session, or a wrong tag: all rejected,
// nothing kept, and the server serves on.
func TestVerbsHWUnauthenticatedFlood(t *testing.T) {
	ts, tr, st := hwServer(t, serverConfig{})
	writeFile(t, ts.root, "f", 4096, 1)
	for i := range 300 {
		priv := []byte(nil)
		switch i % 3 {
		case 1:
			priv = []byte("127.0.0.1:5555\x00")
		case 2:
			priv = make([]byte, pairSize)
			copy(priv, pairMagic)
			copy(priv[4:], newNonceSlice())
		}
		ev := rawQueuePair(t, st, ts.addr, priv)
		require.Equal(t, evRejected, ev.kind, "attempt %d: %s, want REJECTED", i, ev.kind)
	}
	cl := dialTest(t, ts, tr, WithConnections(4))
	_, err := cl.Stat(context.Background(), "f")
	require.NoError(t, err, "after the flood")
}

// The server drains while reads are in flight: Serve returns, every read
// either got its data or failed; nothing hangs.
func TestVerbsHWServerShutdownMidRead(t *testing.T) {
	ts, tr, _ := hwServer(t, serverConfig{DrainTimeout: 5 * time.Second})
	data := writeFile(t, ts.root, "big", 64<<20, 4)
	cl := dialTest(t, ts, tr, WithConnections(8), WithChunkSize(1<<20), WithRetryDeadline(0))
	f, err := cl.Open(context.Background(), "big")
	require.NoError(t, err)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				got := make([]byte, len(data))
				n, err := f.ReadAt(got, 0)
				if err != nil {
					return
				}
				if !assert.Len(t, data, n, "a read that succeeded returned wrong data") || !assert.True(t, bytes.Equal(got, data), "a read that succeeded returned wrong data") {
					return
				}
			}
		})
	}
	time.Sleep(500 * time.Millisecond) // reads in full flight
	start := time.Now()
	ts.stop(t)
	t.Logf("Serve returned %v after cancel", time.Since(start))
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		require.FailNow(t, "reads still running a minute after the server stopped")
	}
}

// A client process killed in the middle of reads: the server notices
// (disconnect, closed TCP), frees its queue pairs and serves the next.
func TestVerbsHWClientKilledMidRead(t *testing.T) {
	if os.Getenv("GDSLOAD_RDMA_CHILD") != "" {
		hwChild()
		return
	}
	if os.Getenv(hwAddrEnv) == "loopback" {
		t.Skip("the loopback fabric lives in one process")
	}
	ts, tr, _ := hwServer(t, serverConfig{})
	data := writeFile(t, ts.root, "big", 64<<20, 5)
	tokFile := t.TempDir() + "/tok"
	os.WriteFile(tokFile, testTok, 0o600)
	cmd := exec.Command(os.Args[0], "-test.run=^TestVerbsHWClientKilledMidRead$")
	cmd.Env = append(os.Environ(), "GDSLOAD_RDMA_CHILD="+ts.addr)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	time.Sleep(time.Second) // the child is reading
	cmd.Process.Kill()
	cmd.Wait()
	require.Contains(t, out.String(), "reading", "the child never read: %s", out.String())
	cl := dialTest(t, ts, tr, WithConnections(4))
	f, err := cl.Open(context.Background(), "big")
	require.NoError(t, err)
	got := make([]byte, len(data))
	n, err := f.ReadAt(got, 0)
	require.Len(t, data, n, "a read after the kill: %d, %v", n, err)
	require.NoError(t, err, "a read after the kill: %d, %v", n, err)
	require.True(t, bytes.Equal(got, data), "a read after the kill: %d, %v", n, err)
	waitForConns(t, ts.srv, 4)
}

// hwChild reads the big file in a loop until killed.
func hwChild() {
	tr, err := Verbs()
	if err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	cl, err := Dial(context.Background(), os.Getenv("GDSLOAD_RDMA_CHILD"), WithToken(testTok), WithTransport(tr), WithConnections(8))
	if err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	f, err := cl.Open(context.Background(), "big")
	if err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	buf := make([]byte, f.Size())
	fmt.Println("reading")
	for {
		f.ReadAt(buf, 0)
	}
}

// waitForConns waits until the server has exactly n connections: the
// killed client's are gone.
func waitForConns(t *testing.T, s *Server, n int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		s.mu.Lock()
		got := len(s.conns)
		s.mu.Unlock()
		if got == n {
			return
		}
		require.False(t, time.Now().After(deadline), "server still has %d connections a minute after the kill, want %d", got, n)
		time.Sleep(100 * time.Millisecond)
	}
}
