package rdmafs

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gdsload/gdsload/rdmafs/wire"
)

func TestRegionTable(t *testing.T) {
	tab := newRegionTable()
	a := make([]byte, 100)
	b := make([]byte, 50)
	ra, _ := tab.register(a)
	rb, _ := tab.register(b)
	if ra.Key == rb.Key || ra.Key == 0 {
		t.Fatalf("keys %x %x must differ and be non-zero", ra.Key, rb.Key)
	}
	tests := []struct {
		name string
		r    Region
		off  uint64
		n    int
		ok   bool
	}{
		{"whole region", ra, 0, 100, true},
		{"tail", ra, 90, 10, true},
		{"one past end", ra, 91, 10, false},
		{"huge offset wraps", ra, ^uint64(0) - 2, 10, false},
		{"wrong key", Region{Addr: ra.Addr, Len: ra.Len, Key: ra.Key ^ 1}, 0, 1, false},
		{"other region's address with this key", Region{Addr: rb.Addr, Len: rb.Len, Key: ra.Key}, 0, 1, false},
		{"address below region", Region{Addr: ra.Addr - 1, Len: ra.Len, Key: ra.Key}, 0, 1, false},
		{"second region", rb, 0, 50, true},
	}
	for _, tc := range tests {
		err := tab.write(tc.r, tc.off, bytes.Repeat([]byte{7}, tc.n))
		if tc.ok != (err == nil) {
			t.Errorf("%s: err = %v, want ok=%v", tc.name, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrRegion) {
			t.Errorf("%s: err %v does not wrap ErrRegion", tc.name, err)
		}
	}
	if err := tab.deregister(ra); err != nil {
		t.Fatal(err)
	}
	a[0] = 0
	if err := tab.write(ra, 0, []byte{9}); !errors.Is(err, ErrRegion) || a[0] != 0 {
		t.Fatalf("write after deregister: err %v, byte %d", err, a[0])
	}
	if err := tab.deregister(ra); !errors.Is(err, ErrRegion) {
		t.Fatalf("double deregister: %v", err)
	}
}

// loopRaw is a raw client over the loopback transport: it can register
// regions and advertise any key it likes.
func loopRaw(t *testing.T, lb *Loopback, addr string) (*raw, *loopClientConn) {
	c, err := lb.Dial(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &raw{t: t, c: c}, c.(*loopClientConn)
}

func TestRegionReadsOverLoopback(t *testing.T) {
	lb := NewLoopback()
	ts := startServer(t, ServerConfig{}, lb)
	data := writeFile(t, ts.root, "f", 1<<20, 3)
	r, cc := loopRaw(t, lb, ts.addr)
	r.mustWelcome(testTok)

	// A correct region read: the data arrives by region write, nothing on
	// the stream but READ_DONE.
	dst := make([]byte, 1<<20)
	rg, _ := cc.Register(dst)
	r.send(wire.TypeRead, 1, wire.Read{Length: 1 << 20, Flags: wire.ReadRegion | wire.ReadCRC, Region: rg, Name: "f"}.Append(nil))
	h, p, err := r.recv()
	if err != nil || h.Type != wire.TypeReadDone {
		t.Fatalf("got %s, %v; want READ_DONE", h.Type, err)
	}
	d, _ := wire.DecodeReadDone(p)
	if d.N != 1<<20 || !bytes.Equal(dst, data) || crc32c(0, dst) != d.CRC {
		t.Fatalf("region read: n=%d equal=%v", d.N, bytes.Equal(dst, data))
	}

	tests := []struct {
		name   string
		region Region
		length uint32
	}{
		{"wrong key", Region{Addr: rg.Addr, Len: rg.Len, Key: rg.Key ^ 0x5a5a}, 4096},
		{"region smaller than read", Region{Addr: rg.Addr, Len: 10, Key: rg.Key}, 4096},
		{"address past region", Region{Addr: rg.Addr + rg.Len - 10, Len: 4096, Key: rg.Key}, 4096},
	}
	for i, tc := range tests {
		id := uint32(10 + i)
		r.send(wire.TypeRead, id, wire.Read{Length: tc.length, Flags: wire.ReadRegion, Region: tc.region, Name: "f"}.Append(nil))
		if h, m := r.expectError(); h.ID != id || m.Code != wire.CodeRegion {
			t.Errorf("%s: id %d code %s (%s), want REGION", tc.name, h.ID, m.Code, m.Message)
		}
	}
	// After the read completed the client deregisters; a replayed request
	// for the old region must be refused and leave the buffer alone.
	if err := cc.Deregister(rg); err != nil {
		t.Fatal(err)
	}
	clear(dst)
	r.send(wire.TypeRead, 20, wire.Read{Length: 4096, Flags: wire.ReadRegion, Region: rg, Name: "f"}.Append(nil))
	if _, m := r.expectError(); m.Code != wire.CodeRegion {
		t.Fatalf("read into deregistered region: code %s", m.Code)
	}
	if !bytes.Equal(dst, make([]byte, len(dst))) {
		t.Fatal("server wrote into a deregistered region")
	}
}

func TestRegionOnStreamTransportRefused(t *testing.T) {
	ts := startServer(t, ServerConfig{}, nil)
	writeFile(t, ts.root, "f", 10, 1)
	r := rawDial(t, ts.addr)
	r.mustWelcome(testTok)
	r.send(wire.TypeRead, 1, wire.Read{Length: 10, Flags: wire.ReadRegion, Region: Region{Addr: 1, Len: 10, Key: 1}, Name: "f"}.Append(nil))
	if _, m := r.expectError(); m.Code != wire.CodeInvalid {
		t.Fatalf("code %s, want INVALID", m.Code)
	}
}

// TestCancelledReadLeavesBufferAlone: when a read is abandoned, no data
// lands in the caller's buffer after ReadAt returns: region transports
// deregister first, the stream transport drops the connection and waits for
// its reader.
func TestCancelledReadLeavesBufferAlone(t *testing.T) {
	for _, trc := range transports() {
		t.Run(trc.name, func(t *testing.T) {
			tr := trc.tr()
			ts := startServer(t, ServerConfig{}, tr)
			writeFile(t, ts.root, "f", 8<<20, 1)
			cl := dialTest(t, ts, tr, WithRetryDeadline(0))
			f, err := cl.Open(context.Background(), "f")
			if err != nil {
				t.Fatal(err)
			}
			for _, delay := range []time.Duration{0, 100 * time.Microsecond, time.Millisecond, 5 * time.Millisecond} {
				ctx, cancel := context.WithTimeout(context.Background(), delay)
				buf := make([]byte, 8<<20)
				_, err := f.ReadAtContext(ctx, buf, 0)
				cancel()
				snap := append([]byte(nil), buf...)
				time.Sleep(20 * time.Millisecond)
				if !bytes.Equal(buf, snap) {
					t.Fatalf("cancel after %v (err %v): buffer written after ReadAt returned", delay, err)
				}
			}
		})
	}
}
