package rdmafs

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/gdsload/gdsload/rdmafs/wire"
)

// maxComponent is the longest path component accepted (NAME_MAX).
const maxComponent = 255

// requestError is a refusal to send back as an ERROR frame.
type requestError struct {
	code wire.Code
	msg  string
}

func (e *requestError) Error() string { return e.code.String() + ": " + e.msg }

func refuse(code wire.Code, format string, args ...any) *requestError {
	return &requestError{code: code, msg: fmt.Sprintf(format, args...)}
}

// checkName refuses names the server will not even try to resolve. os.Root
// enforces containment again when the name is used (symlinks included); this
// check gives clear errors and keeps odd bytes away from the file system.
func checkName(name string, dirOK bool) (string, *requestError) {
	if name == "" || name == "." {
		if dirOK {
			return ".", nil
		}
		return "", refuse(wire.CodeInvalid, "empty name")
	}
	if len(name) > wire.MaxNameLen {
		return "", refuse(wire.CodeInvalid, "name of %d bytes is longer than %d", len(name), wire.MaxNameLen)
	}
	if strings.IndexByte(name, 0) >= 0 {
		return "", refuse(wire.CodeInvalid, "name contains a NUL byte")
	}
	if strings.HasPrefix(name, "/") || filepath.IsAbs(name) {
		return "", refuse(wire.CodePermission, "absolute path %q refused: names are relative to the export root", name)
	}
	if !filepath.IsLocal(name) {
		return "", refuse(wire.CodePermission, "path %q escapes the export root", name)
	}
	for c := range strings.SplitSeq(name, "/") {
		if len(c) > maxComponent {
			return "", refuse(wire.CodeInvalid, "path component of %d bytes is longer than %d", len(c), maxComponent)
		}
	}
	return name, nil
}

// fsError maps a file-system error to a wire refusal without revealing the
// server's own paths.
func fsError(op, name string, err error) *requestError {
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR) && op != "list":
		return refuse(wire.CodeNotFound, "%s %s: no such file or directory", op, name)
	case errors.Is(err, syscall.ENOTDIR):
		return refuse(wire.CodeNotDir, "%s %s: not a directory", op, name)
	case errors.Is(err, fs.ErrPermission):
		return refuse(wire.CodePermission, "%s %s: permission denied", op, name)
	case errors.Is(err, syscall.ENAMETOOLONG):
		return refuse(wire.CodeInvalid, "%s %s: name too long", op, name)
	case errors.Is(err, syscall.ELOOP):
		return refuse(wire.CodePermission, "%s %s: too many levels of symbolic links", op, name)
	case strings.Contains(err.Error(), "path escapes from parent"):
		// os.Root's escape error is not exported; match its text.
		return refuse(wire.CodePermission, "%s %s: path escapes the export root (symbolic link?)", op, name)
	default:
		// A *PathError's cause without its path: the client sees its own
		// name, never where the export lives on the server.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return refuse(wire.CodeIO, "%s %s: %v", op, name, err)
	}
}
