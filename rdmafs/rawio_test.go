package rdmafs

import (
	"bytes"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t *testing.T) (client, server *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	s := <-accepted
	require.NotNil(t, s, "accept failed")
	t.Cleanup(func() { c.Close(); s.Close() })
	return c.(*net.TCPConn), s.(*net.TCPConn)
}

// openTemp writes data to a new temporary file and returns it open for
// reading, closed when the test ends.
func openTemp(t *testing.T, data []byte) *os.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(path, data, 0o600))
	f, err := os.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

// TestSendFileDataAndStreamReader sends a header and file ranges with
// sendFileData and receives them with the client's streamReader: the
// bytes, their order, a file that ends early, and the reader's EOF.
func TestSendFileDataAndStreamReader(t *testing.T) {
	data := make([]byte, 3<<20+17)
	for i := range data {
		data[i] = byte(i*7 + i>>11)
	}
	f := openTemp(t, data)
	fi, err := f.Stat()
	require.NoError(t, err)
	sf := sendFileOf(f, fi)
	c, s := tcpPair(t)
	r := newStreamReader(c)
	_, ok := r.(*streamReader)
	require.True(t, ok, "newStreamReader(TCP) = %T, want *streamReader", r)
	for _, tc := range []struct {
		hdr       string
		off, n    int64
		wantBytes int64
	}{
		{"first", 0, 1 << 20, 1 << 20},
		{"", 5, 100, 100},
		{"middle", 1<<20 + 3, 2 << 20, 2 << 20},
		{"past-end", int64(len(data)) - 10, 4096, 10}, // the file ends: 10 bytes
	} {
		got := make(chan []byte, 1)
		go func() {
			b := make([]byte, int64(len(tc.hdr))+tc.wantBytes)
			_, err := io.ReadFull(r, b)
			assert.NoError(t, err)
			got <- b
		}()
		sent, err := sendFileData(s, []byte(tc.hdr), sf, tc.off, tc.n)
		require.NoError(t, err, "sendFileData(%q, %d, %d) = %d, %v; want %d, nil", tc.hdr, tc.off, tc.n, sent, err, tc.wantBytes)
		require.EqualValues(t, tc.wantBytes, sent, "sendFileData(%q, %d, %d) = %d, %v; want %d, nil", tc.hdr, tc.off, tc.n, sent, err, tc.wantBytes)
		b := <-got
		want := append([]byte(tc.hdr), data[tc.off:tc.off+tc.wantBytes]...)
		require.True(t, bytes.Equal(b, want), "received %d bytes that differ from the header and file bytes [%d, +%d)", len(b), tc.off, tc.wantBytes)
	}
	s.Close()
	n, err := r.Read(make([]byte, 10))
	require.Zero(t, n, "Read after the peer closed = %d, %v; want 0, EOF", n, err)
	require.Equal(t, io.EOF, err, "Read after the peer closed = %d, %v; want 0, EOF", n, err)
}

// TestStreamReaderDeadlineAndClose checks that the raw reader honours the
// connection's read deadline and returns when the connection is closed
// under it, as the connection's own Read does.
func TestStreamReaderDeadlineAndClose(t *testing.T) {
	c, _ := tcpPair(t)
	r := newStreamReader(c)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(20*time.Millisecond)))
	_, err := r.Read(make([]byte, 10))
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "Read past the deadline: %v, want os.ErrDeadlineExceeded", err)
	require.NoError(t, c.SetReadDeadline(time.Time{}))
	done := make(chan error, 1)
	go func() {
		_, err := r.Read(make([]byte, 10))
		done <- err
	}()
	c.Close()
	select {
	case err := <-done:
		require.ErrorIs(t, err, net.ErrClosed, "Read on a closed connection: %v, want net.ErrClosed", err)
	case <-time.After(10 * time.Second):
		require.FailNow(t, "Read did not return after Close")
	}
	p1, p2 := net.Pipe()
	defer p1.Close()
	defer p2.Close()
	got := newStreamReader(p1)
	require.True(t, got == p1, "newStreamReader(pipe) = %T, want the connection itself", got)
}
