// Package rdmafsfs serves rdmafs://host:port/path URLs through a vfs.Mux:
// each server's export is an FS, reached through one rdmafs.Client shared
// by every file opened from it. Importing the package registers the
// scheme with vfs.Register, so every Mux that vfs.New makes serves it,
// with clients that present the token in the GDSLOAD_TOKEN environment
// variable, if set; With sets the client options of one Mux.
package rdmafsfs

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/rdmafs"
	"github.com/gdsload/gdsload/vfs"
)

// Name is the URL scheme served: rdmafs://host:port/path.
const Name = "rdmafs"

func init() {
	vfs.Register(Name, vfs.Backend{
		Scheme: func() vfs.Scheme { return rdmafsScheme{fromEnv: true} },
		Parse: func(raw string) (string, string, error) {
			u, err := rdmafs.ParseURL(raw)
			if err != nil {
				return "", "", err
			}
			return u.Addr, strings.Trim(u.Path, "/"), nil
		},
	})
}

// With sets the client options of every rdmafs server the Mux dials
// (token, connections, CRC, transport: rdmafs.WithToken and the rest),
// checked when the option is applied. Without it, clients present the
// token in the GDSLOAD_TOKEN environment variable, if set, with rdmafs's
// defaults otherwise.
func With(opts ...rdmafs.Option) vfs.Option {
	if err := rdmafs.CheckOptions(opts...); err != nil {
		return func(*vfs.Mux) error { return err }
	}
	return vfs.WithScheme(Name, rdmafsScheme{opts: slices.Clone(opts)})
}

// rdmafsScheme dials one client per server with opts. Without options it
// presents the token in rdmafs.TokenEnv, if set.
type rdmafsScheme struct {
	opts    []rdmafs.Option
	fromEnv bool
}

func (s rdmafsScheme) FS(ctx context.Context, addr string) (vfs.FS, error) {
	opts := s.opts
	if s.fromEnv {
		tok, err := rdmafs.ClientToken("")
		if err != nil {
			return nil, fmt.Errorf("rdmafs server %s: %w", addr, err)
		}
		if tok != nil {
			opts = []rdmafs.Option{rdmafs.WithToken(tok)}
		}
	}
	c, err := rdmafs.Dial(ctx, addr, opts...)
	if err != nil {
		return nil, fmt.Errorf("rdmafs server %s: %w", addr, err)
	}
	return &rdmafsFS{c: c, addr: addr}, nil
}

// rdmafsFS is one server's export, through one client shared by every
// file opened from it.
type rdmafsFS struct {
	c    *rdmafs.Client
	addr string
}

func (r *rdmafsFS) url(name string) string { return rdmafs.URL{Addr: r.addr, Path: name}.String() }

func (r *rdmafsFS) Stat(ctx context.Context, name string) (fs.FileInfo, error) {
	if name == "" {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return vfs.NewFileInfo("/", 0, fs.ModeDir|0o555, time.Time{}), nil // the export root
	}
	return r.c.Stat(ctx, name)
}

func (r *rdmafsFS) List(ctx context.Context, name string) ([]fs.FileInfo, error) {
	ents, err := r.c.List(ctx, name)
	if err != nil {
		return nil, err
	}
	out := make([]fs.FileInfo, len(ents))
	for i, e := range ents {
		out[i] = e
	}
	return out, nil
}

func (r *rdmafsFS) Open(ctx context.Context, name string) (vfs.File, error) {
	f, err := r.c.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	return &remoteFile{File: f, url: r.url(name)}, nil
}

func (r *rdmafsFS) OpenInfo(ctx context.Context, name string, fi fs.FileInfo) (vfs.File, error) {
	if _, ok := fi.(rdmafs.FileInfo); !ok {
		return r.Open(ctx, name)
	}
	f, err := r.c.OpenInfo(ctx, name, fi)
	if err != nil {
		return nil, err
	}
	return &remoteFile{File: f, url: r.url(name)}, nil
}

// Close hangs up the client.
func (r *rdmafsFS) Close() error { return r.c.Close() }

// remoteFile is an rdmafs file named by its URL. It keeps the file's
// ReadAtContext and ReadAtDevice, and binds to a GPU's RDMA memory when
// its client's transport can write into device memory (verbs).
type remoteFile struct {
	*rdmafs.File
	url string
}

var (
	_ vfs.File                  = (*remoteFile)(nil)
	_ vfs.InfoOpener            = (*rdmafsFS)(nil)
	_ loader.ContextReaderAt    = (*remoteFile)(nil)
	_ loader.DeviceReaderSource = (*remoteFile)(nil)
	_ loader.DeviceBinder       = (*remoteFile)(nil)
)

// Name is the file's URL.
func (f *remoteFile) Name() string { return f.url }

// ModTime is the modification time the server reported at open.
func (f *remoteFile) ModTime() time.Time { return f.Stat().ModTime() }

// Identity is the size and modification time the server reported at open
// and, from a server that reports them (rdmafs.FileID), the file's device,
// inode and change time there.
func (f *remoteFile) Identity() string {
	s := fmt.Sprintf("size %d mtime %d", f.Size(), f.Stat().ModTime().UnixNano())
	if id, ok := f.Stat().FileID(); ok {
		s += fmt.Sprintf(" dev %d ino %d ctime %d", id.Dev, id.Ino, id.Ctime.UnixNano())
	}
	return s
}

// Close does nothing: an rdmafs file holds no server state.
func (f *remoteFile) Close() error { return nil }

// BindDevice returns the file reading into GPU memory through mem, when
// its client's transport can (verbs).
func (f *remoteFile) BindDevice(mem loader.DeviceMemory) (loader.DeviceReaderSource, bool) {
	if !f.DeviceReads() {
		return nil, false
	}
	return &remoteFile{File: f.File.WithDeviceMemory(mem), url: f.url}, true
}
