package fileops

import (
	"os"

	"golang.org/x/sys/unix"
)

func pread(f *os.File, p []byte, off int64) (int, error)  { return unix.Pread(int(f.Fd()), p, off) }
func pwrite(f *os.File, p []byte, off int64) (int, error) { return unix.Pwrite(int(f.Fd()), p, off) }
func datasync(f *os.File) error                           { return unix.Fdatasync(int(f.Fd())) }
