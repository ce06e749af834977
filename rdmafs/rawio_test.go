package rdmafs

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t *testing.T) (client, server *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s := <-accepted
	if s == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c.(*net.TCPConn), s.(*net.TCPConn)
}

// openTemp writes data to a new temporary file and returns it open for
// reading, closed when the test ends.
func openTemp(t *testing.T, data []byte) *os.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
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
	if err != nil {
		t.Fatal(err)
	}
	sf := sendFileOf(f, fi)
	c, s := tcpPair(t)
	r := newStreamReader(c)
	if _, ok := r.(*streamReader); !ok {
		t.Fatalf("newStreamReader(TCP) = %T, want *streamReader", r)
	}
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
			if _, err := io.ReadFull(r, b); err != nil {
				t.Error(err)
			}
			got <- b
		}()
		sent, err := sendFileData(s, []byte(tc.hdr), sf, tc.off, tc.n)
		if err != nil || sent != tc.wantBytes {
			t.Fatalf("sendFileData(%q, %d, %d) = %d, %v; want %d, nil", tc.hdr, tc.off, tc.n, sent, err, tc.wantBytes)
		}
		b := <-got
		want := append([]byte(tc.hdr), data[tc.off:tc.off+tc.wantBytes]...)
		if !bytes.Equal(b, want) {
			t.Fatalf("received %d bytes that differ from the header and file bytes [%d, +%d)", len(b), tc.off, tc.wantBytes)
		}
	}
	s.Close()
	if n, err := r.Read(make([]byte, 10)); n != 0 || err != io.EOF {
		t.Fatalf("Read after the peer closed = %d, %v; want 0, EOF", n, err)
	}
}

// TestStreamReaderDeadlineAndClose checks that the raw reader honours the
// connection's read deadline and returns when the connection is closed
// under it, as the connection's own Read does.
func TestStreamReaderDeadlineAndClose(t *testing.T) {
	c, _ := tcpPair(t)
	r := newStreamReader(c)
	if err := c.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Read(make([]byte, 10)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read past the deadline: %v, want os.ErrDeadlineExceeded", err)
	}
	if err := c.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := r.Read(make([]byte, 10))
		done <- err
	}()
	c.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Read on a closed connection: %v, want net.ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Read did not return after Close")
	}
	p1, p2 := net.Pipe()
	defer p1.Close()
	defer p2.Close()
	if got := newStreamReader(p1); got != p1 {
		t.Fatalf("newStreamReader(pipe) = %T, want the connection itself", got)
	}
}
