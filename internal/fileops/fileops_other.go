//go:build !linux

package fileops

import (
	"io"
	"os"
)

// Outside Linux there is no O_DIRECT here: the os package's loops serve.

func pread(f *os.File, p []byte, off int64) (int, error) {
	n, err := f.ReadAt(p, off)
	if err == io.EOF {
		err = nil
	}
	return n, err
}

func pwrite(f *os.File, p []byte, off int64) (int, error) { return f.WriteAt(p, off) }
func datasync(f *os.File) error                           { return f.Sync() }
