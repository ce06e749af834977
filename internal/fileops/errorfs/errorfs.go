// Package errorfs wraps a fileops.FS so that tests can inject faults into any
// file operation (an errno, a short transfer, a change to the file) and
// observe the order of operations, in the manner of pebble's errorfs.
package errorfs

import (
	"os"
	"sync"

	"github.com/gdsload/gdsload/internal/fileops"
)

// Kind names an operation.
type Kind string

// Operations a hook sees.
const (
	OpOpen     Kind = "open"
	OpPread    Kind = "pread"
	OpReadAt   Kind = "readat"
	OpPwrite   Kind = "pwrite"
	OpWrite    Kind = "write"
	OpSync     Kind = "fsync"
	OpDatasync Kind = "fdatasync"
	OpTruncate Kind = "truncate"
	OpClose    Kind = "close"
	OpRename   Kind = "rename"
	OpRemove   Kind = "remove"
	OpSyncDir  Kind = "syncdir"
)

// Op is one operation about to run. A hook may shorten P to make a read or
// a write move fewer bytes (the caller sees a short count).
type Op struct {
	Kind Kind
	Path string // the file, the directory of SyncDir, the old path of Rename
	To   string // the new path of Rename
	Off  int64  // the offset of Pread, Pwrite and ReadAt; the size of Truncate
	P    []byte // the buffer of reads and writes
	File fileops.File
}

// Hook is called before every operation; a non-nil error is returned in
// its place (the operation does not run). It is called from many
// goroutines at once.
type Hook func(op *Op) error

// Wrap returns fs with hook called before each of its operations and those
// of the files it opens.
func Wrap(fs fileops.FS, hook Hook) fileops.FS { return &wrapFS{fs: fs, hook: hook} }

// WrapFile returns f with hook called before each of its operations.
func WrapFile(f fileops.File, hook Hook) fileops.File { return &wrapFile{File: f, hook: hook} }

type wrapFS struct {
	fs   fileops.FS
	hook Hook
}

func (w *wrapFS) OpenFile(name string, flag int, perm os.FileMode) (fileops.File, error) {
	if err := w.hook(&Op{Kind: OpOpen, Path: name}); err != nil {
		return nil, err
	}
	f, err := w.fs.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return WrapFile(f, w.hook), nil
}

func (w *wrapFS) Rename(oldpath, newpath string) error {
	if err := w.hook(&Op{Kind: OpRename, Path: oldpath, To: newpath}); err != nil {
		return err
	}
	return w.fs.Rename(oldpath, newpath)
}

func (w *wrapFS) Remove(name string) error {
	if err := w.hook(&Op{Kind: OpRemove, Path: name}); err != nil {
		return err
	}
	return w.fs.Remove(name)
}

func (w *wrapFS) SyncDir(dir string) error {
	if err := w.hook(&Op{Kind: OpSyncDir, Path: dir}); err != nil {
		return err
	}
	return w.fs.SyncDir(dir)
}

type wrapFile struct {
	fileops.File
	hook Hook
}

func (f *wrapFile) op(k Kind, off int64, p []byte) (*Op, error) {
	op := &Op{Kind: k, Path: f.Name(), Off: off, P: p, File: f.File}
	return op, f.hook(op)
}

func (f *wrapFile) Pread(p []byte, off int64) (int, error) {
	op, err := f.op(OpPread, off, p)
	if err != nil {
		return 0, err
	}
	return f.File.Pread(op.P, off)
}

func (f *wrapFile) ReadAt(p []byte, off int64) (int, error) {
	op, err := f.op(OpReadAt, off, p)
	if err != nil {
		return 0, err
	}
	return f.File.ReadAt(op.P, off)
}

func (f *wrapFile) Pwrite(p []byte, off int64) (int, error) {
	op, err := f.op(OpPwrite, off, p)
	if err != nil {
		return 0, err
	}
	return f.File.Pwrite(op.P, off)
}

func (f *wrapFile) Write(p []byte) (int, error) {
	op, err := f.op(OpWrite, -1, p)
	if err != nil {
		return 0, err
	}
	return f.File.Write(op.P)
}

func (f *wrapFile) Sync() error {
	if _, err := f.op(OpSync, 0, nil); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *wrapFile) Datasync() error {
	if _, err := f.op(OpDatasync, 0, nil); err != nil {
		return err
	}
	return f.File.Datasync()
}

func (f *wrapFile) Truncate(size int64) error {
	if _, err := f.op(OpTruncate, size, nil); err != nil {
		return err
	}
	return f.File.Truncate(size)
}

func (f *wrapFile) Close() error {
	if _, err := f.op(OpClose, 0, nil); err != nil {
		return err
	}
	return f.File.Close()
}

// Log records operations in the order they ran, for tests that check
// the order of writes, syncs and renames.
type Log struct {
	mu  sync.Mutex
	ops []Op
}

// Record is a Hook that appends op to the log and lets it run. The log
// keeps the bytes of Write operations (appends of journal records) and
// not those of reads and positioned writes.
func (l *Log) Record(op *Op) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := *op
	c.File = nil
	if c.Kind == OpWrite {
		c.P = append([]byte(nil), c.P...)
	} else {
		c.P = nil
	}
	l.ops = append(l.ops, c)
	return nil
}

// Ops returns the operations recorded so far.
func (l *Log) Ops() []Op {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Op(nil), l.ops...)
}
