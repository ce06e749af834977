// Package regular opens regular files safely: a FIFO, socket or device
// named where a file is expected is refused at once, never waited on.
package regular

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// OpenWith opens through open with flag|O_NONBLOCK (so opening a FIFO does
// not wait for a writer), refuses anything but a regular file, naming its
// type, and clears O_NONBLOCK again so reads block as usual. name is the
// path errors report.
func OpenWith(name string, flag int, open func(flag int) (*os.File, error)) (*os.File, os.FileInfo, error) {
	f, err := open(flag | unix.O_NONBLOCK)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = &NotRegularError{Path: name, Mode: fi.Mode()}
	}
	if err == nil {
		if serr := unix.SetNonblock(int(f.Fd()), false); serr != nil {
			err = &os.PathError{Op: "fcntl", Path: name, Err: serr}
		}
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// Open opens path read-only as OpenWith does.
func Open(path string) (*os.File, os.FileInfo, error) {
	return OpenWith(path, os.O_RDONLY, func(flag int) (*os.File, error) { return os.OpenFile(path, flag, 0) })
}

// NotRegularError reports a path that is not a regular file.
type NotRegularError struct {
	Path string
	Mode os.FileMode
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s: not a regular file: %s", e.Path, Describe(e.Mode))
}

// Describe names a file's type for errors.
func Describe(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a FIFO (named pipe)"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a block device (load files, not devices)"
	}
	return "type " + m.Type().String()
}
