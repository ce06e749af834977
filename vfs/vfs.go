package vfs

import (
	"context"
	"io"
	"io/fs"
	"time"

	"github.com/gdsload/gdsload/loader"
)

// FS is one file system of a scheme: a local disk, the export of one
// rdmafs server, one bucket. Names are slash-separated paths within it
// ("" for its root; a local FS takes operating-system paths as they are).
// Methods may be called from many goroutines at once and must honour ctx
// for anything that blocks. Errors wrap fs.ErrNotExist for a missing
// name and fs.ErrPermission for a refused one.
type FS interface {
	// Stat describes name, following a symbolic link to what it names.
	Stat(ctx context.Context, name string) (fs.FileInfo, error)
	// List returns the entries directly in directory name, sorted by
	// name. A symbolic link is listed as a link (Mode has ModeSymlink).
	List(ctx context.Context, name string) ([]fs.FileInfo, error)
	// Open opens regular file name for reading. The File's Name is the
	// URL (for a local FS, the path) that opens it again.
	Open(ctx context.Context, name string) (File, error)
}

// File is an opened file: a loader.Source that also says when the file
// was modified and which version of it the handle reads. ReadAt may be
// called from many goroutines at once. The opener closes it, after any
// load that reads it has returned.
type File interface {
	loader.Source
	// ModTime is the modification time when the file was opened.
	ModTime() time.Time
	// Identity names the version of the file the handle reads: device,
	// inode and change time for a local file, the ETag of an object,
	// size, modification time and (from servers that report them)
	// device, inode and change time for an rdmafs file. Two handles with
	// the same identity read the same bytes.
	Identity() string
	io.Closer
}

// Scheme makes the FS a URL's authority names: the server at host:port
// for rdmafs, the bucket for s3. A Mux calls FS once per authority, from
// one goroutine at a time for that authority, and keeps the result until
// Mux.Close, which closes it when it is an io.Closer (a client pool).
type Scheme interface {
	FS(ctx context.Context, authority string) (FS, error)
}

// InfoOpener is an optional capability of an FS: OpenInfo opens a regular
// file that Stat or List has just described as fi, without asking the
// storage again (an rdmafs directory of 10,000 files opens with no request
// per file).
type InfoOpener interface {
	OpenInfo(ctx context.Context, name string, fi fs.FileInfo) (File, error)
}

// Walker is an optional capability of an FS that finds every regular file
// at or below directory name in one pass (an object store lists a prefix
// without a delimiter) instead of one List per directory. fn is called
// with each file's slash-separated path relative to name, in any order.
type Walker interface {
	WalkFiles(ctx context.Context, name string, fn func(rel string, fi fs.FileInfo) error) error
}

// NewFileInfo describes a file or directory for an FS that has no
// fs.FileInfo of its own (an object, a prefix, a server's root).
func NewFileInfo(name string, size int64, mode fs.FileMode, mtime time.Time) fs.FileInfo {
	return fileInfo{name: name, size: size, mode: mode, mtime: mtime}
}

type fileInfo struct {
	name  string
	size  int64
	mode  fs.FileMode
	mtime time.Time
}

func (fi fileInfo) Name() string       { return fi.name }
func (fi fileInfo) Size() int64        { return fi.size }
func (fi fileInfo) Mode() fs.FileMode  { return fi.mode }
func (fi fileInfo) ModTime() time.Time { return fi.mtime }
func (fi fileInfo) IsDir() bool        { return fi.mode.IsDir() }
func (fi fileInfo) Sys() any           { return nil }
