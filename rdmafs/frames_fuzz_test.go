package rdmafs

import (
	"net"
	"testing"
	"time"

	"github.com/gdsload/gdsload/rdmafs/wire"
	"github.com/stretchr/testify/require"
)

// FuzzServerFrames sends arbitrary bytes to a live server, before the
// handshake (first byte even) or after a good one (odd), then half-closes
// the connection. Whatever the bytes, the server must answer or refuse
// them and close within its deadline, never hang, crash or serve the
// next client less: after the input a fresh client must still read a
// file byte for byte. TestMalformedFramesRefused holds the exact answer
// to each known bad frame; this holds the server to the rest.
func FuzzServerFrames(f *testing.F) {
	ts := startServer(f, serverConfig{}, nil)
	want := writeFile(f, ts.root, "f", 3000, 1)
	stat := wire.AppendFrame(nil, wire.TypeStat, 1, wire.Stat{Name: "f"}.Append(nil))
	read := wire.AppendFrame(nil, wire.TypeRead, 2, wire.Read{Length: 3000, Name: "f"}.Append(nil))
	for _, seed := range [][]byte{
		stat,
		append(append([]byte(nil), stat...), read...),
		wire.AppendFrame(nil, wire.TypeRead, 3, wire.Read{Offset: 1 << 40, Length: 10, Name: "../f"}.Append(nil)),
		wire.AppendFrame(nil, wire.TypeHello, 0, make([]byte, 36)),
		headerBytes(wire.Magic, wire.Version, uint8(wire.TypeRead), 1, 0xffffffff),
		wire.AppendFrame(nil, 99, 1, nil),
		read[:wire.HeaderSize+3],
	} {
		f.Add(append([]byte{1}, seed...)) // after the handshake
		f.Add(append([]byte{0}, seed...)) // instead of it
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		r := rawDial(t, ts.addr)
		if data[0]%2 == 1 {
			r.mustWelcome(testTok)
		}
		// Drain what the server sends while the bytes go out: it may
		// answer, refuse and close before they are all written.
		drained := make(chan error, 1)
		go func() { drained <- drainUntilClosed(r.c, 10*time.Second) }()
		_ = r.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
		if _, err := r.c.Write(data[1:]); err == nil {
			_ = r.c.(*net.TCPConn).CloseWrite()
		}
		require.NoError(t, <-drained, "after %d bytes (handshake first: %v)", len(data)-1, data[0]%2 == 1)
		// The server still serves a well-behaved client.
		r2 := rawDial(t, ts.addr)
		r2.mustWelcome(testTok)
		got := r2.read(1, "f", uint32(len(want)))
		require.Equal(t, string(want), string(got), "a fresh client read %d bytes, not the file's %d", len(got), len(want))
	})
}
