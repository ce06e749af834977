package loader

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/gdsload/gdsload/internal/durable"
)

// CheckSavePath reports whether SaveFile could write path, without
// writing it: path's directory exists and takes a new file, and path is not
// a directory. A caller that saves at the end of a long run (an iterator's
// state, a result) calls it first, to fail before the run rather than after
// it. The file's name must leave room for the temporary file's. Nothing
// is left behind: the directory is tried with an unnamed
// O_TMPFILE file, or, where the file system has none, with a temporary
// file (a name durable.IsTempName recognises) removed at once. A missing directory
// matches fs.ErrNotExist, a refused one fs.ErrPermission.
func CheckSavePath(path string) error {
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("saving to %s: %w", path, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("saving to %s: %s is not a directory", path, dir)
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("saving to %s: it is a directory; name a file in it", path)
	}
	tmp, err := durable.TempName(path)
	if err != nil {
		return err
	}
	if len(filepath.Base(tmp)) > unix.NAME_MAX {
		return fmt.Errorf("saving to %s: the name is too long for its temporary file (%d bytes, at most %d)", path, len(filepath.Base(tmp)), unix.NAME_MAX)
	}
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
	if err == nil {
		return unix.Close(fd)
	}
	if !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("saving to %s: directory %s does not take a new file: %w", path, dir, err)
	}
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("saving to %s: directory %s does not take a new file: %w", path, dir, err)
	}
	return errors.Join(f.Close(), os.Remove(tmp))
}
