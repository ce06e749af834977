//go:build !linux

package loader

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"unsafe"

	"github.com/gdsload/gdsload/internal/fileops"
)

// OpenFile opens a local file for loading. Outside Linux there is no
// O_DIRECT here: reads go through the page cache and DirectReason says so;
// DirectOn is an error.
func OpenFile(name string, mode DirectMode) (*File, error) {
	f := &File{name: name, align: DefaultAlignment, memAlign: DefaultAlignment}
	if mode != DirectOff {
		f.reason = "O_DIRECT is only supported on Linux; using buffered reads"
		if mode == DirectOn {
			return nil, fmt.Errorf("%s: %w: %s", name, ErrDirectRefused, f.reason)
		}
	}
	fd, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	st, err := fd.Stat()
	if err != nil {
		fd.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		fd.Close()
		return nil, fmt.Errorf("%s: not a regular file (%s)", name, st.Mode().Type())
	}
	f.f = fileops.OS(fd)
	f.id = fileIdentity{size: st.Size(), mtime: st.ModTime()}
	f.size = st.Size()
	return f, nil
}

func identify(f fileops.File) (fileIdentity, error) {
	st, err := f.Stat()
	if err != nil {
		return fileIdentity{}, err
	}
	return fileIdentity{size: st.Size(), mtime: st.ModTime()}, nil
}

func identifyInfo(fi os.FileInfo) (fileIdentity, error) {
	return fileIdentity{}, errors.New("no file identity outside Linux")
}

func addrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// FSName names the file system holding path; unknown outside Linux.
func FSName(string) string { return "this file system" }

// AllocHost returns n bytes of page-aligned host memory.
func AllocHost(n int) ([]byte, error) { return alignedSlice(n, 4096), nil }

// FreeHost releases memory from AllocHost (garbage-collected here).
func FreeHost([]byte) error { return nil }

// OpenFileInRoot is OpenFile for a name resolved beneath root.
func OpenFileInRoot(root *os.Root, name string, mode DirectMode) (*File, error) {
	f, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	f.Close()
	return OpenFile(filepath.Join(root.Name(), name), mode)
}
