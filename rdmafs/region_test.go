package rdmafs

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/gdsload/gdsload/rdmafs/wire"
	"github.com/stretchr/testify/require"
)

// loopRaw is a raw client over the loopback transport: it authenticates,
// pairs its queue pair, and can then register regions and advertise any
// key it likes.
func loopRaw(t *testing.T, lb *loopback, addr string) (*raw, *verbsClientConn) {
	t.Helper()
	c, err := lb.Dial(context.Background(), addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	r := &raw{t: t, c: c}
	r.mustWelcome(testTok)
	vc := c.(*verbsClientConn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, vc.connectQueuePair(ctx, newPairingSession(testTok, &r.nonces[0], &r.nonces[1])), "connect queue pair")
	return r, vc
}

// TestRegionReadsOverLoopback: a region read lands by RDMA WRITE with only
// READ_DONE on the queue pair; a region the server's own check refuses is
// answered ERROR REGION and the connection stays; a write the client's
// device refuses (wrong key, outside the region, deregistered) fails the
// queue pair, the server drops the connection, and the client's memory is
// untouched.
func TestRegionReadsOverLoopback(t *testing.T) {
	lb := newLoopback()
	ts := startServer(t, serverConfig{}, lb)
	data := writeFile(t, ts.root, "f", 1<<20, 3)
	r, cc := loopRaw(t, lb, ts.addr)

	dst := make([]byte, 1<<20)
	rg, err := cc.Register(dst)
	require.NoError(t, err)
	r.send(wire.TypeRead, 1, wire.Read{Length: 1 << 20, Flags: wire.ReadRegion | wire.ReadCRC, Region: rg, Name: "f"}.Append(nil))
	h, p, err := r.recv()
	require.NoError(t, err, "got %s, %v; want READ_DONE", h.Type, err)
	require.EqualValues(t, wire.TypeReadDone, h.Type, "got %s, %v; want READ_DONE", h.Type, err)
	d, _ := wire.DecodeReadDone(p)
	require.EqualValues(t, 1<<20, d.N, "region read: n=%d equal=%v", d.N, bytes.Equal(dst, data))
	require.True(t, bytes.Equal(dst, data), "region read: n=%d equal=%v", d.N, bytes.Equal(dst, data))
	require.Equal(t, d.CRC, crc32c(0, dst), "region read: n=%d equal=%v", d.N, bytes.Equal(dst, data))
	// The server's own range check: refused before any WRITE.
	r.send(wire.TypeRead, 2, wire.Read{Length: 4096, Flags: wire.ReadRegion, Region: Region{Addr: rg.Addr, Len: 10, Key: rg.Key}, Name: "f"}.Append(nil))
	h, m := r.expectError()
	require.EqualValues(t, 2, h.ID, "region smaller than the read: id %d code %s (%s), want REGION", h.ID, m.Code, m.Message)
	require.Equal(t, wire.CodeRegion, m.Code, "region smaller than the read: id %d code %s (%s), want REGION", h.ID, m.Code, m.Message)
	require.NoError(t, cc.Deregister(rg))

	tests := []struct {
		name   string
		region func(own Region) Region
	}{
		{"wrong key", func(own Region) Region { return Region{Addr: own.Addr, Len: own.Len, Key: own.Key ^ 0x5a5a} }},
		{"address past region", func(own Region) Region { return Region{Addr: own.Addr + own.Len - 10, Len: 4096, Key: own.Key} }},
		{"deregistered region", func(own Region) Region { return Region{} }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, cc := loopRaw(t, lb, ts.addr)
			buf := make([]byte, 8192)
			own, err := cc.Register(buf[:4096])
			require.NoError(t, err)
			target := tc.region(own)
			if tc.name == "deregistered region" {
				target = own
				require.NoError(t, cc.Deregister(own))
			}
			r.send(wire.TypeRead, 1, wire.Read{Length: 4096, Flags: wire.ReadRegion, Region: target, Name: "f"}.Append(nil))
			r.expectClosed()
			require.True(t, bytes.Equal(buf, make([]byte, len(buf))), "the server's write landed in the client's memory")
		})
	}
}

func TestRegionOnStreamTransportRefused(t *testing.T) {
	ts := startServer(t, serverConfig{}, nil)
	writeFile(t, ts.root, "f", 10, 1)
	r := rawDial(t, ts.addr)
	r.mustWelcome(testTok)
	r.send(wire.TypeRead, 1, wire.Read{Length: 10, Flags: wire.ReadRegion, Region: Region{Addr: 1, Len: 10, Key: 1}, Name: "f"}.Append(nil))
	_, m := r.expectError()
	require.Equal(t, wire.CodeInvalid, m.Code, "code %s, want INVALID", m.Code)
}

// TestCancelledReadLeavesBufferAlone: when a read is abandoned, no data
// lands in the caller's buffer after ReadAt returns: region transports
// deregister first, the stream transport drops the connection and waits for
// its reader.
func TestCancelledReadLeavesBufferAlone(t *testing.T) {
	for _, trc := range transports() {
		t.Run(trc.name, func(t *testing.T) {
			tr := trc.tr()
			ts := startServer(t, serverConfig{}, tr)
			writeFile(t, ts.root, "f", 8<<20, 1)
			cl := dialTest(t, ts, tr, WithRetryDeadline(0))
			f, err := cl.Open(context.Background(), "f")
			require.NoError(t, err)
			for _, delay := range []time.Duration{0, 100 * time.Microsecond, time.Millisecond, 5 * time.Millisecond} {
				ctx, cancel := context.WithTimeout(context.Background(), delay)
				buf := make([]byte, 8<<20)
				_, err := f.ReadAtContext(ctx, buf, 0)
				cancel()
				snap := append([]byte(nil), buf...)
				time.Sleep(20 * time.Millisecond)
				require.True(t, bytes.Equal(buf, snap), "cancel after %v (err %v): buffer written after ReadAt returned", delay, err)
			}
		})
	}
}
