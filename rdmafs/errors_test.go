package rdmafs

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/gdsload/gdsload/rdmafs/wire"
	"github.com/stretchr/testify/assert"
)

// A missing or refused remote path matches the io/fs errors, as a local
// path's error does, and still its own sentinel.
func TestErrorsMatchFS(t *testing.T) {
	for _, tc := range []struct {
		code     wire.Code
		sentinel error
		fsErr    error
	}{
		{wire.CodeNotFound, ErrNotFound, fs.ErrNotExist},
		{wire.CodePermission, ErrPermission, fs.ErrPermission},
	} {
		err := error(&Error{Op: "stat", Name: "x", Code: tc.code, Err: codeErr(tc.code)})
		assert.ErrorIs(t, err, tc.sentinel, "%s: %v matches %v: %t, %v: %t", tc.code, err, tc.sentinel, errors.Is(err, tc.sentinel), tc.fsErr, errors.Is(err, tc.fsErr))
		assert.ErrorIs(t, err, tc.fsErr, "%s: %v matches %v: %t, %v: %t", tc.code, err, tc.sentinel, errors.Is(err, tc.sentinel), tc.fsErr, errors.Is(err, tc.fsErr))
	}
	assert.NotErrorIs(t, ErrNotFound, fs.ErrPermission, "a sentinel matches an fs error of another meaning")
	assert.NotErrorIs(t, ErrIO, fs.ErrNotExist, "a sentinel matches an fs error of another meaning")
	assert.EqualValues(t, "not found", ErrNotFound.Error(), "ErrNotFound reads %q", ErrNotFound)
}
