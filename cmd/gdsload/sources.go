package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/gdsload/gdsload/loader"
)

// expandPaths turns the command line's files and directories into a list of
// regular files: directories recursively, in lexical order, following
// symbolic links to files (not to directories, which could loop).
func expandPaths(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		if isRemote(p) {
			out = append(out, p)
			continue
		}
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			out = append(out, p)
			continue
		}
		var found []string
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.Type()&fs.ModeSymlink != 0 {
				// Follow a link to the file it names, as stage does; a
				// link to nowhere is an error, not a silent gap.
				st, err := os.Stat(path)
				if err != nil {
					return fmt.Errorf("%s: a symbolic link whose target cannot be read: %w", path, err)
				}
				if st.Mode().IsRegular() {
					found = append(found, path)
				}
				return nil
			}
			if d.Type().IsRegular() {
				found = append(found, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		sort.Strings(found)
		out = append(out, found...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no files to load in %v", paths)
	}
	return out, nil
}

// openedSources holds what must be closed after a load.
type openedSources struct {
	sources []loader.Source
	closers []func() error
}

func (o *openedSources) Close() {
	for _, c := range o.closers {
		_ = c()
	}
}

func (o *openedSources) total() int64 {
	var n int64
	for _, s := range o.sources {
		n += s.Size()
	}
	return n
}

// openSources opens every path: local files with the direct mode asked
// for, rdmafs:// URLs (files or directories) through the remote client.
func openSources(ctx context.Context, paths []string, mode loader.DirectMode, remote *remoteOptions) (*openedSources, error) {
	o := &openedSources{closers: []func() error{remote.Close}}
	for _, p := range paths {
		if isRemote(p) {
			srcs, err := openRemote(ctx, p, remote)
			if err != nil {
				o.Close()
				return nil, err
			}
			o.sources = append(o.sources, srcs...)
			continue
		}
		f, err := loader.OpenFileForLoad(p, mode)
		if err != nil {
			o.Close()
			return nil, err
		}
		o.sources = append(o.sources, f)
		o.closers = append(o.closers, f.Close)
	}
	return o, nil
}
