// Package fileops is the small file interface that the loader reads through
// and that SaveFile and stage write through, in the manner of pebble's vfs:
// production code uses Default, the operating system, and tests wrap it
// (package errorfs) to inject faults at any operation or to observe the
// order in which files are written, synced and renamed. The production
// types carry no test hooks.
package fileops

import (
	"fmt"
	"os"
)

// File is an open file. Pread and Pwrite are single system calls: like
// pread(2) and pwrite(2) they may move fewer bytes than asked or fail with
// EINTR, and callers loop. Every method is safe for concurrent use.
type File interface {
	// Name is the path the file was opened with.
	Name() string
	// Fd is the descriptor, for system calls outside this interface
	// (fcntl, statx, fallocate, cuFile).
	Fd() uintptr
	// Pread reads into p at off with one pread(2).
	Pread(p []byte, off int64) (int, error)
	// ReadAt reads len(p) bytes at off through the page cache, as
	// io.ReaderAt (looping over short reads).
	ReadAt(p []byte, off int64) (int, error)
	// Pwrite writes p at off with one pwrite(2).
	Pwrite(p []byte, off int64) (int, error)
	// Write writes p at the file offset (or at the end, O_APPEND).
	Write(p []byte) (int, error)
	// Sync flushes data and metadata to stable storage (fsync).
	Sync() error
	// Datasync flushes data and the metadata needed to read it back
	// (fdatasync).
	Datasync() error
	// Truncate changes the size.
	Truncate(size int64) error
	// Stat describes the open file (fstat).
	Stat() (os.FileInfo, error)
	// Close closes the descriptor.
	Close() error
}

// FS opens files and changes directories. Every method is safe for
// concurrent use.
type FS interface {
	// OpenFile opens name as os.OpenFile does.
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	// Rename renames oldpath to newpath, replacing it (rename(2)).
	Rename(oldpath, newpath string) error
	// Remove removes a file or empty directory.
	Remove(name string) error
	// SyncDir fsyncs directory dir, making the creations, renames and
	// removals in it durable.
	SyncDir(dir string) error
}

// Default is the operating system's file system.
func Default() FS { return osFS{} }

// OS is f as a File.
func OS(f *os.File) File { return osFile{f} }

type osFS struct{}

func (osFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) Rename(oldpath, newpath string) error { return os.Rename(oldpath, newpath) }

func (osFS) Remove(name string) error { return os.Remove(name) }

func (osFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}

type osFile struct{ *os.File }

func (f osFile) Pread(p []byte, off int64) (int, error)  { return pread(f.File, p, off) }
func (f osFile) Pwrite(p []byte, off int64) (int, error) { return pwrite(f.File, p, off) }
func (f osFile) Datasync() error                         { return datasync(f.File) }
