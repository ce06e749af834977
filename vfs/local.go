package vfs

import (
	"context"
	"fmt"
	"io/fs"
	"os"

	"github.com/gdsload/gdsload/loader"
)

// localFS is the machine's own file system: names are operating-system
// paths, files open as *loader.File (O_DIRECT where the file system takes
// it).
type localFS struct {
	direct      loader.DirectMode
	bufferSmall bool
}

// Local is the local file system as an FS: files open with O_DIRECT where
// the file system takes it (loader.DirectAuto). A Mux opens local paths
// itself, with the OpenOptions of each call.
func Local() FS { return localFS{} }

func (l localFS) Stat(ctx context.Context, name string) (fs.FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return os.Stat(name)
}

func (l localFS) List(ctx context.Context, name string) ([]fs.FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(name) // sorted by name
	if err != nil {
		return nil, err
	}
	out := make([]fs.FileInfo, len(ents))
	err = forEach(ctx, len(ents), func(i int) error {
		fi, err := ents[i].Info()
		if err != nil {
			return fmt.Errorf("listing %s: %w", name, err)
		}
		out[i] = fi
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (l localFS) Open(ctx context.Context, name string) (File, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var f *loader.File
	var err error
	if l.bufferSmall {
		f, err = loader.OpenFileForLoad(name, l.direct)
	} else {
		f, err = loader.OpenFile(name, l.direct)
	}
	if err != nil {
		return nil, err // a *fs.PathError, or names the path
	}
	return f, nil
}
