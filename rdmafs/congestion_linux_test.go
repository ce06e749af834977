package rdmafs

import (
	"context"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// probeCongestion returns the congestion control a fresh loopback TCP
// connection gets from the kernel, and what it has after asking for name
// (the same when the kernel lacks name or refuses it).
func probeCongestion(t *testing.T, name string) (dflt, after string) {
	t.Helper()
	c, _ := tcpPair(t)
	dflt, err := tcpCongestion(c)
	require.NoError(t, err)
	if setTCPCongestion(c, name) != nil {
		return dflt, dflt
	}
	after, err = tcpCongestion(c)
	require.NoError(t, err)
	return dflt, after
}

// serverCongestions returns the congestion control of each of the
// server's client connections.
func serverCongestions(t *testing.T, s *Server) []string {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for sc := range s.conns {
		name, err := tcpCongestion(sc.c.(*net.TCPConn))
		require.NoError(t, err)
		out = append(out, name)
	}
	return out
}

// TestServerTCPCongestion checks that the server puts its TCP connections
// on the congestion control configured (cubic by default), keeps the
// kernel's default when told to or when the kernel refuses the name, and
// serves either way.
func TestServerTCPCongestion(t *testing.T) {
	for _, tc := range []struct{ cfg, ask string }{
		{"", DefaultTCPCongestion},
		{"reno", "reno"},
		{SystemTCPCongestion, ""},
		{"no_such_cc", "no_such_cc"},
	} {
		t.Run(tc.cfg, func(t *testing.T) {
			dflt, want := probeCongestion(t, tc.ask)
			if tc.ask == "" {
				want = dflt
			}
			ts := startServer(t, serverConfig{TCPCongestion: tc.cfg}, nil)
			data := writeFile(t, ts.root, "f", 100<<10, 3)
			cl := dialTest(t, ts, nil, WithConnections(2))
			f, err := cl.Open(context.Background(), "f")
			require.NoError(t, err)
			buf := make([]byte, len(data))
			_, err = f.ReadAt(buf, 0)
			require.NoError(t, err, "read: %v (or the bytes differ)", err)
			require.Equal(t, string(data), string(buf), "read: %v (or the bytes differ)", err)
			got := serverCongestions(t, ts.srv)
			require.Len(t, got, 2, "server has %d connections, want 2", len(got))
			for _, g := range got {
				assert.EqualValues(t, want, g, "server connection on %q, want %q (kernel default %q)", g, want, dflt)
			}
		})
	}
}

func TestCheckTCPCongestion(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"cubic", true}, {"bbr", true}, {"dctcp", true}, {"system", true}, {"h_tcp2", true},
		{"", false}, {"Cubic", false}, {"cubic ", false}, {"../x", false}, {"a-b", false},
		{"abcdefghijklmnop", false}, {"abcdefghijklmno", true},
	} {
		err := CheckTCPCongestion(tc.name)
		assert.Equal(t, tc.ok, (err == nil), "CheckTCPCongestion(%q) = %v, want ok=%v", tc.name, err, tc.ok)
	}
	_, err := newServer(serverConfig{Root: t.TempDir(), InsecureNoToken: true, TCPCongestion: "not valid"})
	assert.Error(t, err, "NewServer took an invalid congestion control name")
}
