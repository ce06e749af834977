package rdmafs

import (
	"bytes"
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/gdsload/gdsload/rdmafs/wire"
)

// TestSlowClientDoesNotBlockOthers: a client that asks for lots of data and
// never reads holds at most ConnBuffers pool buffers and is cut off after
// WriteTimeout; meanwhile other clients are served.
func TestSlowClientDoesNotBlockOthers(t *testing.T) {
	ts := startServer(t, ServerConfig{PoolBuffers: 4, ConnBuffers: 2, BufferSize: 64 << 10, WriteTimeout: time.Second}, nil)
	data := writeFile(t, ts.root, "f", 16<<20, 5)

	slow := rawDial(t, ts.addr)
	slow.mustWelcome(testTok)
	for id := uint32(1); id <= 16; id++ {
		slow.send(wire.TypeRead, id, wire.Read{Length: 16 << 20, Flags: wire.ReadCRC, Name: "f"}.Append(nil)) // CRC: served from the pool
	}
	time.Sleep(100 * time.Millisecond) // let the server fill the socket

	cl := dialTest(t, ts, nil, WithConnections(1), WithRetryDeadline(0))
	f, err := cl.Open(context.Background(), "f")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	buf := make([]byte, 1<<20)
	for i := range 8 {
		off := int64(i) << 20
		if _, err := f.ReadAt(buf, off); err != nil || !bytes.Equal(buf, data[off:off+1<<20]) {
			t.Fatalf("read %d while a slow client is connected: %v", i, err)
		}
	}
	// The server's write deadline is 1 s: the reads must not have waited
	// for it to release the slow client.
	if d := time.Since(start); d > 900*time.Millisecond {
		t.Fatalf("reads took %v: the slow client held the server", d)
	}
	// And the slow client is eventually cut off.
	deadline := time.Now().Add(5 * time.Second)
	for ts.srv.metrics.connsActive.Load() > 1 {
		if time.Now().After(deadline) {
			t.Fatalf("slow connection still open 5 s later (%d active)", ts.srv.metrics.connsActive.Load())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := ts.srv.pool.inUse(); n != 0 {
		t.Fatalf("%d pool buffers still in use after the slow client was cut", n)
	}
}

// TestManyClientsRandomReads: 64 clients, each on its own connection, do
// random verified reads concurrently.
func TestManyClientsRandomReads(t *testing.T) {
	ts := startServer(t, ServerConfig{PoolBuffers: 16, BufferSize: 64 << 10}, nil)
	data := writeFile(t, ts.root, "f", 4<<20, 9)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for c := range 64 {
		wg.Go(func() {
			cl := dialTest(t, ts, nil, WithConnections(1), WithChunkSize(64<<10))
			f, err := cl.Open(context.Background(), "f")
			if err != nil {
				errs <- err
				return
			}
			r := rand.New(rand.NewPCG(uint64(c), 1))
			for range 8 {
				n := r.IntN(200 << 10)
				off := r.Int64N(int64(len(data) - n))
				buf := make([]byte, n)
				if _, err := f.ReadAt(buf, off); err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(buf, data[off:off+int64(n)]) {
					t.Errorf("client %d: mismatch at %d+%d", c, off, n)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
