package rdmafs

import (
	"testing"
	"time"

	"github.com/gdsload/gdsload/rdmafs/wire"
	"github.com/stretchr/testify/require"
)

// TestMalformedFramesRefused sends broken frames after a good handshake.
// Each must be refused with an ERROR and a closed connection, and the
// server must keep serving new connections.
func TestMalformedFramesRefused(t *testing.T) {
	ts := startServer(t, serverConfig{}, nil)
	writeFile(t, ts.root, "f", 10, 1)
	good := wire.Read{Length: 10, Name: "f"}.Append(nil)
	tests := []struct {
		name  string
		bytes []byte
		code  wire.Code
	}{
		{"bad magic", headerBytes(0xdead, wire.Version, uint8(wire.TypeStat), 1, 0), wire.CodeProtocol},
		{"future version", headerBytes(wire.Magic, 9, uint8(wire.TypeStat), 1, 0), wire.CodeProtocol},
		{"length 4 GiB", headerBytes(wire.Magic, wire.Version, uint8(wire.TypeRead), 1, 0xffffffff), wire.CodeTooLarge},
		{"length cap+1", headerBytes(wire.Magic, wire.Version, uint8(wire.TypeRead), 1, wire.MaxPayload+1), wire.CodeTooLarge},
		{"unknown type", wire.AppendFrame(nil, 99, 1, nil), wire.CodeProtocol},
		{"server-only type", wire.AppendFrame(nil, wire.TypeReadDone, 1, make([]byte, 9)), wire.CodeProtocol},
		{"second HELLO", wire.AppendFrame(nil, wire.TypeHello, 1, make([]byte, 36)), wire.CodeProtocol},
		{"empty READ", wire.AppendFrame(nil, wire.TypeRead, 1, nil), wire.CodeProtocol},
		{"READ trailing bytes", wire.AppendFrame(nil, wire.TypeRead, 1, append(good, 0)), wire.CodeProtocol},
		{"READ truncated", wire.AppendFrame(nil, wire.TypeRead, 1, good[:len(good)-1]), wire.CodeProtocol},
		{"READ unknown flag", wire.AppendFrame(nil, wire.TypeRead, 1, func() []byte {
			b := append([]byte(nil), good...)
			b[12] = 0x80
			return b
		}()), wire.CodeProtocol},
		{"name length past payload", wire.AppendFrame(nil, wire.TypeStat, 1, []byte{0xff, 0xff, 'a'}), wire.CodeProtocol},
		{"request id 0", wire.AppendFrame(nil, wire.TypeStat, 0, wire.Stat{Name: "f"}.Append(nil)), wire.CodeProtocol},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := rawDial(t, ts.addr)
			r.mustWelcome(testTok)
			r.sendBytes(tc.bytes)
			_, m := r.expectError()
			require.Equal(t, tc.code, m.Code, "code %s (%q), want %s", m.Code, m.Message, tc.code)
			r.expectClosed()
		})
	}
	t.Run("truncated frame then EOF", func(t *testing.T) {
		r := rawDial(t, ts.addr)
		r.mustWelcome(testTok)
		r.sendBytes(wire.AppendFrame(nil, wire.TypeRead, 1, good)[:wire.HeaderSize+3])
		r.c.(interface{ CloseWrite() error }).CloseWrite()
		r.expectClosed()
	})
	// Still alive.
	r := rawDial(t, ts.addr)
	r.mustWelcome(testTok)
}

// TestCreditsEnforced: a client that exceeds the credits it was granted is
// refused with CREDITS.
func TestCreditsEnforced(t *testing.T) {
	ts := startServer(t, serverConfig{Credits: 2, PoolBuffers: 4, BufferSize: 64 << 10}, nil)
	writeFile(t, ts.root, "big", 48<<20, 1)
	r := rawDial(t, ts.addr)
	r.mustWelcome(testTok)
	// Two 16 MiB reads that the client does not drain keep both credits
	// busy (socket buffers are far smaller than 32 MiB).
	for id := uint32(1); id <= 3; id++ {
		r.send(wire.TypeRead, id, wire.Read{Length: 16 << 20, Offset: uint64(id) << 20, Name: "big"}.Append(nil))
	}
	h, m := r.expectError()
	require.EqualValues(t, wire.CodeCredits, m.Code, "got id %d code %s, want id 3 CREDITS", h.ID, m.Code)
	require.EqualValues(t, 3, h.ID, "got id %d code %s, want id 3 CREDITS", h.ID, m.Code)
}

// TestDeadlines: an authenticated client that goes quiet is closed after
// IdleTimeout, and one that stalls inside a frame after ReadTimeout.
func TestDeadlines(t *testing.T) {
	t.Run("idle", func(t *testing.T) {
		const idle = 400 * time.Millisecond
		ts := startServer(t, serverConfig{IdleTimeout: idle}, nil)
		// The server arms its idle deadline after it reads the last
		// frame, so after this: the connection cannot close sooner than
		// idle from here however loaded the machine, and a close any
		// sooner is a deadline armed short.
		start := time.Now()
		r := rawDial(t, ts.addr)
		r.mustWelcome(testTok)
		r.expectClosed()
		require.GreaterOrEqual(t, time.Since(start), idle, "closed before the idle timeout")
	})
	t.Run("stalled frame", func(t *testing.T) {
		// The idle timeout is far longer than expectClosed waits: only the
		// read timeout can close this connection in time.
		ts := startServer(t, serverConfig{ReadTimeout: 200 * time.Millisecond, IdleTimeout: time.Minute}, nil)
		r := rawDial(t, ts.addr)
		r.mustWelcome(testTok)
		frame := wire.AppendFrame(nil, wire.TypeStat, 1, wire.Stat{Name: "some/long/name"}.Append(nil))
		r.sendBytes(frame[:wire.HeaderSize+3])
		r.expectClosed()
	})
}
