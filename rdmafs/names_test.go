package rdmafs

import (
	"errors"
	"io/fs"
	"syscall"
	"testing"

	"github.com/gdsload/gdsload/rdmafs/wire"
	"github.com/stretchr/testify/assert"
)

// File-system errors become wire codes the client maps to its sentinels,
// and their text never carries the server's own paths.
func TestFSErrorMapping(t *testing.T) {
	secret := "/srv/export/secret/dir"
	pathErr := func(err error) error { return &fs.PathError{Op: "open", Path: secret + "/x", Err: err} }
	for _, tc := range []struct {
		op   string
		err  error
		code wire.Code
		want error
	}{
		{"stat", pathErr(syscall.ENOENT), wire.CodeNotFound, ErrNotFound},
		{"open", pathErr(syscall.ENOTDIR), wire.CodeNotFound, ErrNotFound},
		{"list", pathErr(syscall.ENOTDIR), wire.CodeNotDir, ErrInvalid},
		{"open", pathErr(syscall.EACCES), wire.CodePermission, ErrPermission},
		{"open", pathErr(syscall.ENAMETOOLONG), wire.CodeInvalid, ErrInvalid},
		{"open", pathErr(syscall.ELOOP), wire.CodePermission, ErrPermission},
		{"open", pathErr(errors.New("openat x: path escapes from parent")), wire.CodePermission, ErrPermission},
		{"read", pathErr(syscall.EIO), wire.CodeIO, ErrIO},
		{"read", syscall.EIO, wire.CodeIO, ErrIO},
	} {
		e := fsError(tc.op, "x", tc.err)
		assert.Equal(t, tc.code, e.code, "fsError(%s, %v) = %v; want code %v", tc.op, tc.err, e, tc.code)
		assert.ErrorIs(t, codeErr(e.code), tc.want, "fsError(%s, %v) = %v; want code %v", tc.op, tc.err, e, tc.code)
		assert.NotContains(t, e.msg, "/srv", "fsError(%s, %v) says %q", tc.op, tc.err, e.msg)
		assert.NotContains(t, e.msg, "<nil>", "fsError(%s, %v) says %q", tc.op, tc.err, e.msg)
	}
}
