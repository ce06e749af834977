package rdmafs

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrChanged: the file changed on the server while it was read (its type,
// size, modification time, change time or inode differ from what Open or
// List saw), so the bytes read may mix two versions. Read it again.
var ErrChanged = errors.New("rdmafs: file changed during the read")

// Verify asks the server for the file's metadata again and reports an
// error wrapping ErrChanged when its type, size, modification time, or
// (from servers that report a FileID) its inode or change time, to the
// nanosecond, differ from what was seen when the file was opened, or when
// it is gone. It is the loader's Verifier: a load calls it after the last
// byte is read, so a file rewritten on the server during the load fails
// that file, as a local file does, instead of passing off a mix of old and
// new bytes (whose digest, taken from the bytes received, would match
// them). The change time catches a rewrite that keeps size and
// modification time (within the timestamp granularity, or a time set back
// with touch -d); the inode, a file replaced by rename. A server that
// reports no FileID gets the type, size and mtime checks alone; a file
// opened with a FileID whose check gets none (an older server answered)
// fails, as its change cannot be ruled out.
func (f *File) Verify() error { return f.VerifyContext(context.Background()) }

// VerifyContext is Verify with a context for the request.
func (f *File) VerifyContext(ctx context.Context) error {
	now, err := f.cl.Stat(ctx, f.name)
	if errors.Is(err, ErrNotFound) {
		return &Error{Op: "verify", Name: f.name, Msg: "removed on the server after it was opened; the bytes read may be incomplete or mixed, read it again", Err: fmt.Errorf("%w: %w", ErrChanged, err)}
	}
	if err != nil {
		return err
	}
	var why string
	switch was := f.info; {
	case now.mode.Type() != was.mode.Type():
		why = fmt.Sprintf("now %s, was %s", now.mode.Type(), was.mode.Type())
	case was.hasID && !now.hasID:
		why = "the server answering the check reports no change time or inode, the one at open did; an older server?"
	case was.hasID && (now.id.Dev != was.id.Dev || now.id.Ino != was.id.Ino):
		why = fmt.Sprintf("replaced: inode %d on device %d, was inode %d on device %d", now.id.Ino, now.id.Dev, was.id.Ino, was.id.Dev)
	case now.size != was.size:
		why = fmt.Sprintf("size %d, was %d", now.size, was.size)
	case !now.mtime.Equal(was.mtime):
		why = fmt.Sprintf("modified at %s, was %s", now.mtime.Format(time.RFC3339Nano), was.mtime.Format(time.RFC3339Nano))
	case was.hasID && !now.id.Ctime.Equal(was.id.Ctime):
		why = fmt.Sprintf("status changed at %s, was %s", now.id.Ctime.Format(time.RFC3339Nano), was.id.Ctime.Format(time.RFC3339Nano))
	default:
		return nil
	}
	return &Error{Op: "verify", Name: f.name, Err: ErrChanged,
		Msg: "changed on the server while it was read (" + why + "); the bytes read may mix old and new contents, read it again"}
}
