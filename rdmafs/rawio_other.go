//go:build !linux

package rdmafs

import (
	"io"
	"net"
	"os"
)

func newStreamReader(c net.Conn) io.Reader { return c }

// sendFileData writes hdr, then n bytes of f from off, to c (sendfile(2)
// where the platform has it).
func sendFileData(c *net.TCPConn, hdr []byte, f *os.File, off, n int64) (int64, error) {
	if _, err := c.Write(hdr); err != nil {
		return 0, err
	}
	return c.ReadFrom(io.NewSectionReader(f, off, n))
}
