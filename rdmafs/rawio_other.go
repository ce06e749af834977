//go:build !linux

package rdmafs

import (
	"io"
	"net"
	"os"
	"syscall"
)

func newStreamReader(c net.Conn) io.Reader { return c }

// sendFileData writes hdr, then n bytes of sf from off, to c (sendfile(2)
// where the platform has it).
func sendFileData(c *net.TCPConn, hdr []byte, sf *sendFile, off, n int64) (int64, error) {
	if _, err := c.Write(hdr); err != nil {
		return 0, err
	}
	return c.ReadFrom(io.NewSectionReader(sf.f, off, n))
}

// writeBuffers writes every byte of bufs to c.
func writeBuffers(c net.Conn, bufs [][]byte) error {
	nb := net.Buffers(bufs)
	_, err := nb.WriteTo(c)
	return err
}

// openCached is Linux's: elsewhere every file is opened through os.Root.
func (s *Server) openCached(string) *sendFile { return nil }

func closeRaw(uintptr) {}

func rawOpenDir(*os.File) (syscall.RawConn, string) {
	return nil, "raw opens are Linux-only"
}
