package rdmafs

import (
	"bytes"
	"context"
	"hash/crc32"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/gdsload/gdsload/rdmafs/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostileServer speaks just enough rdmafs (no authentication) to bring a
// client to a READ, then answers each READ with reply. It serves every
// connection the client opens, until the test ends.
func hostileServer(t *testing.T, size int, reply func(c net.Conn, id uint32, r wire.Read)) string {
	return hostileServerListing(t, size, nil, reply)
}

// hostileServerListing is hostileServer that also answers every LIST with
// the entries named.
func hostileServerListing(t *testing.T, size int, names []string, reply func(c net.Conn, id uint32, r wire.Read)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				serveHostile(c, size, names, reply)
			})
		}
	})
	return ln.Addr().String()
}

func serveHostile(c net.Conn, size int, names []string, reply func(c net.Conn, id uint32, r wire.Read)) {
	buf := make([]byte, wire.MaxPayload)
	send := func(t wire.Type, id uint32, payload []byte) { c.Write(wire.AppendFrame(nil, t, id, payload)) }
	if _, _, err := wire.ReadFrame(c, buf, wire.MaxPayload); err != nil { // HELLO
		return
	}
	send(wire.TypeChallenge, 0, wire.Challenge{Mode: wire.AuthNone}.Append(nil))
	if _, _, err := wire.ReadFrame(c, buf, wire.MaxPayload); err != nil { // AUTH
		return
	}
	send(wire.TypeWelcome, 0, wire.Welcome{Credits: 4, MaxPayload: wire.MaxPayload, MaxRead: 1 << 20, Chunk: 1 << 20}.Append(nil))
	for {
		h, p, err := wire.ReadFrame(c, buf, wire.MaxPayload)
		if err != nil {
			return
		}
		switch h.Type {
		case wire.TypeStat:
			send(wire.TypeStatOK, h.ID, wire.FileInfo{Size: uint64(size), Mtime: 1, Mode: 0o644}.Append(nil))
		case wire.TypeList:
			var page wire.ListOK
			for _, n := range names {
				page.Entries = append(page.Entries, wire.FileInfo{Name: n, Size: 1, Mtime: 1, Mode: 0o644})
			}
			send(wire.TypeListOK, h.ID, page.Append(nil))
		case wire.TypeRead:
			r, err := wire.DecodeRead(p)
			if err != nil {
				return
			}
			reply(c, h.ID, r)
		}
	}
}

// openHostile dials the hostile server at addr with one connection and
// opens x.bin; the client is closed and the context cancelled when the
// test ends.
func openHostile(t *testing.T, addr string) (context.Context, *File) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	cl, err := Dial(ctx, addr, WithConnections(1), WithRetryDeadline(time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { cl.Close() })
	f, err := cl.Open(ctx, "x.bin")
	require.NoError(t, err)
	return ctx, f
}

// A client facing a server that lies must fail the read with a protocol
// or checksum error, never write outside the caller's buffer, and never
// return bytes it did not receive.
func TestClientRefusesHostileServer(t *testing.T) {
	data := func(c net.Conn, id uint32, off, n uint32, payload []byte) {
		c.Write(append(wire.AppendFrame(nil, wire.TypeData, id, wire.Data{Offset: off, N: n}.Append(nil)), payload...))
	}
	done := func(c net.Conn, id uint32, m wire.ReadDone) {
		c.Write(wire.AppendFrame(nil, wire.TypeReadDone, id, m.Append(nil)))
	}
	junk := bytes.Repeat([]byte{0xEE}, 8192)
	for _, tc := range []struct {
		name  string
		reply func(c net.Conn, id uint32, r wire.Read)
		want  error
	}{
		// The honest answer first: the harness itself works.
		{"honest", func(c net.Conn, id uint32, r wire.Read) {
			data(c, id, 0, r.Length, junk[:r.Length])
			done(c, id, wire.ReadDone{N: r.Length, HasCRC: r.Flags&wire.ReadCRC != 0, CRC: crc32.Checksum(junk[:r.Length], crc32.MakeTable(crc32.Castagnoli))})
		}, nil},
		{"data past the buffer", func(c net.Conn, id uint32, r wire.Read) {
			data(c, id, r.Length, 16, junk[:16])
		}, ErrProtocol},
		{"data longer than asked", func(c net.Conn, id uint32, r wire.Read) {
			data(c, id, 0, r.Length+512, junk[:r.Length+512])
		}, ErrProtocol},
		{"data out of order", func(c net.Conn, id uint32, r wire.Read) {
			data(c, id, 100, 10, junk[:10])
		}, ErrProtocol},
		{"data for another request", func(c net.Conn, id uint32, r wire.Read) {
			data(c, id+1000, 0, 10, junk[:10])
		}, ErrProtocol},
		{"done claims bytes never sent", func(c net.Conn, id uint32, r wire.Read) {
			data(c, id, 0, 100, junk[:100])
			done(c, id, wire.ReadDone{N: r.Length})
		}, ErrProtocol},
		{"wrong checksum", func(c net.Conn, id uint32, r wire.Read) {
			data(c, id, 0, r.Length, junk[:r.Length])
			done(c, id, wire.ReadDone{N: r.Length, HasCRC: true, CRC: crc32.Checksum(junk[:r.Length], crc32.MakeTable(crc32.Castagnoli)) + 1})
		}, ErrChecksum},
		{"frame over the size cap", func(c net.Conn, id uint32, r wire.Read) {
			var h [wire.HeaderSize]byte
			wire.PutHeader(h[:], wire.Header{Type: wire.TypeReadDone, ID: id, Length: wire.MaxPayload + 1})
			c.Write(h[:])
		}, ErrProtocol},
		{"unknown frame type", func(c net.Conn, id uint32, r wire.Read) {
			c.Write(wire.AppendFrame(nil, wire.Type(200), id, nil))
		}, ErrProtocol},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := hostileServer(t, 1<<20, tc.reply)
			ctx, f := openHostile(t, addr)
			// The caller's buffer sits between guard bytes.
			backing := bytes.Repeat([]byte{0x11}, 3*4096)
			buf := backing[4096 : 2*4096 : 2*4096]
			n, err := f.ReadAtContext(ctx, buf, 0)
			require.ErrorIs(t, err, tc.want, "ReadAt = %d, %v; want %v", n, err, tc.want)
			require.False(t, tc.want == nil && !bytes.Equal(buf, junk[:len(buf)]), "ReadAt = %d, %v; want %v", n, err, tc.want)
			for i, b := range backing {
				require.False(t, (i < 4096 || i >= 2*4096) && b != 0x11, "byte %d outside the buffer was written", i)
			}
		})
	}
}

// Listing entries are names inside the directory: a server that lists
// "..", an empty name or a path is refused, so no caller (stage, say) can
// be steered outside its destination.
func TestClientRefusesHostileListing(t *testing.T) {
	for _, bad := range []string{"..", ".", "", "../../etc/passwd", "a/b", "nul\x00"} {
		addr := hostileServerListing(t, 1, []string{"ok.bin", bad}, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		cl, err := Dial(ctx, addr, WithConnections(1))
		require.NoError(t, err)
		_, err = cl.List(ctx, "dir")
		assert.ErrorIs(t, err, ErrProtocol, "listing with %q: %v, want ErrProtocol", bad, err)
		cl.Close()
		cancel()
	}
	addr := hostileServerListing(t, 1, []string{"a.bin", "b.bin"}, nil)
	cl, err := Dial(context.Background(), addr, WithConnections(1))
	require.NoError(t, err)
	defer cl.Close()
	got, err := cl.List(context.Background(), "dir")
	assert.NoError(t, err, "honest listing: %v, %v", got, err)
	assert.Len(t, got, 2, "honest listing: %v, %v", got, err)
}

// A peer that accepts and says nothing (another program on the port) is
// reported as such once the handshake time is up.
func TestDialSilentPeer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // hold it open, silent
		}
	}()
	start := time.Now()
	_, err = Dial(context.Background(), ln.Addr().String(), WithConnections(1), WithTimeout(300*time.Millisecond), WithRetryDeadline(time.Millisecond))
	require.Error(t, err, "Dial to a silent peer: %v", err)
	require.ErrorContains(t, err, "did not answer the rdmafs handshake within 300ms", "Dial to a silent peer: %v", err)
	assert.LessOrEqual(t, time.Since(start), 5*time.Second, "took %v", time.Since(start))
}

// A DATA piece is received and summed crcSegment bytes at a time: a byte
// changed in any segment, or at either side of a boundary, fails the read
// with ErrChecksum, and the honest bytes pass.
func TestChecksumCoversEverySegment(t *testing.T) {
	const size = 1 << 20 // two segments in one DATA piece
	require.Greater(t, size, crcSegment, "the test needs a read longer than one segment (%d bytes)", crcSegment)
	want := make([]byte, size)
	for i := range want {
		want[i] = byte(i*7 + i>>11)
	}
	sum := crc32.Checksum(want, crc32.MakeTable(crc32.Castagnoli))
	for _, tc := range []struct {
		name    string
		flip    int // index of the byte the server changes; -1: none
		wantErr error
	}{
		{"honest", -1, nil},
		{"first byte", 0, ErrChecksum},
		{"last byte of the first segment", crcSegment - 1, ErrChecksum},
		{"first byte of the second segment", crcSegment, ErrChecksum},
		{"last byte", size - 1, ErrChecksum},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := hostileServer(t, size, func(c net.Conn, id uint32, r wire.Read) {
				sent := bytes.Clone(want[:r.Length])
				if tc.flip >= 0 && tc.flip < len(sent) {
					sent[tc.flip] ^= 0x40
				}
				c.Write(append(wire.AppendFrame(nil, wire.TypeData, id, wire.Data{Offset: 0, N: r.Length}.Append(nil)), sent...))
				c.Write(wire.AppendFrame(nil, wire.TypeReadDone, id, wire.ReadDone{N: r.Length, HasCRC: true, CRC: sum}.Append(nil)))
			})
			ctx, f := openHostile(t, addr)
			buf := make([]byte, size)
			n, err := f.ReadAtContext(ctx, buf, 0)
			require.ErrorIs(t, err, tc.wantErr, "ReadAt = %d, %v; want %v", n, err, tc.wantErr)
			require.False(t, tc.wantErr == nil && !bytes.Equal(buf, want), "the bytes read differ from the bytes sent")
		})
	}
}
