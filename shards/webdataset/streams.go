package webdataset

import (
	"errors"
	"io"
)

// sliceReader reads a tar in memory; Seek lets archive/tar skip payloads
// without copying them.
type sliceReader struct {
	b   []byte
	off int64
}

func (s *sliceReader) Read(p []byte) (int, error) {
	if s.off >= int64(len(s.b)) {
		return 0, io.EOF
	}
	n := copy(p, s.b[s.off:])
	s.off += int64(n)
	return n, nil
}

func (s *sliceReader) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += s.off
	case io.SeekEnd:
		offset += int64(len(s.b))
	default:
		return 0, errors.New("bad whence")
	}
	if offset < 0 {
		return 0, errors.New("seek before start")
	}
	s.off = offset
	return offset, nil
}

// countingReader counts the uncompressed bytes the tar reader consumed, so
// errors can say where in the stream they happened.
type countingReader struct {
	r        io.Reader
	n        int64
	progress func(int64) // nil, or told of every byte read
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.progress != nil && n > 0 {
		c.progress(int64(n))
	}
	return n, err
}
