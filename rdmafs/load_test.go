package rdmafs

import (
	"bytes"
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/gdsload/gdsload/rdmafs/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSlowClientDoesNotBlockOthers: a client that asks for lots of data and
// never reads blocks only its own connection: the server's writes to it
// stall (sendfile into a full socket, with or without a CRC) while other
// clients are served, and it is cut off after WriteTimeout. No bound on
// time is asserted: the reads must finish while the slow client is still
// connected, with a write timeout far longer than they can take.
func TestSlowClientDoesNotBlockOthers(t *testing.T) {
	for _, tc := range []struct {
		name         string
		writeTimeout time.Duration
	}{
		{"others served", time.Minute},
		{"slow cut off", 300 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t, serverConfig{PoolBuffers: 4, ConnBuffers: 2, BufferSize: 64 << 10, WriteTimeout: tc.writeTimeout}, nil)
			data := writeFile(t, ts.root, "f", 16<<20, 5)

			slow := rawDial(t, ts.addr)
			slow.mustWelcome(testTok)
			for id := uint32(1); id <= 16; id++ {
				flags := uint8(0)
				if id%2 == 0 {
					flags = wire.ReadCRC
				}
				slow.send(wire.TypeRead, id, wire.Read{Length: 16 << 20, Flags: flags, Name: "f"}.Append(nil))
			}
			// Wait until the server is sending to the slow client.
			for deadline := time.Now().Add(10 * time.Second); ts.srv.metrics.bytesSent.Load() == 0; time.Sleep(time.Millisecond) {
				require.False(t, time.Now().After(deadline), "the server sent nothing to the slow client in 10 s")
			}
			if tc.writeTimeout == time.Minute {
				cl := dialTest(t, ts, nil, WithConnections(1), WithRetryDeadline(0))
				f, err := cl.Open(context.Background(), "f")
				require.NoError(t, err)
				buf := make([]byte, 1<<20)
				for i := range 8 {
					off := int64(i) << 20
					_, err := f.ReadAt(buf, off)
					require.NoError(t, err, "read %d while a slow client is connected: %v", i, err)
					require.True(t, bytes.Equal(buf, data[off:off+1<<20]), "read %d while a slow client is connected: %v", i, err)
				}
				n := ts.srv.metrics.connsActive.Load()
				require.EqualValues(t, 2, n, "%d connections active after the reads, want the slow one and the reader's", n)
				return
			}
			// The slow client is cut off once a write to it has waited
			// WriteTimeout, and holds nothing afterwards.
			deadline := time.Now().Add(10 * time.Second)
			for ts.srv.metrics.connsActive.Load() > 0 {
				require.False(t, time.Now().After(deadline), "slow connection still open 10 s later (%d active)", ts.srv.metrics.connsActive.Load())
				time.Sleep(time.Millisecond)
			}
			n := ts.srv.pool.inUse()
			require.Zero(t, n, "%d pool buffers still in use after the slow client was cut", n)
		})
	}
}

// TestManyClientsRandomReads: 64 clients, each on its own connection, do
// random verified reads concurrently.
func TestManyClientsRandomReads(t *testing.T) {
	ts := startServer(t, serverConfig{PoolBuffers: 16, BufferSize: 64 << 10}, nil)
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
				if !assert.True(t, bytes.Equal(buf, data[off:off+int64(n)]), "client %d: mismatch at %d+%d", c, off, n) {
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
}
