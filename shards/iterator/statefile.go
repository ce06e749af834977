package iterator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/vfs"
)

// ErrStateURL reports a state file named by a URL (s3://, rdmafs://):
// state files are local files, and no URL scheme takes writes.
var ErrStateURL = errors.New("an iterator state file must be a local path")

// localStatePath maps path to the local file it names: itself, or the path
// of a file:// URL. Any other URL is refused with ErrStateURL, so that it
// is never written as a local folder named after its scheme.
func localStatePath(path string) (string, error) {
	if !vfs.IsURL(path) {
		return path, nil
	}
	if loc, err := vfs.Parse(path); err == nil && loc.IsLocal() {
		return loc.Path, nil
	}
	return "", fmt.Errorf("iterator state %s: %w; save it to a local file and copy it to the store from there", path, ErrStateURL)
}

// maxStateFile bounds a state file: a State is a few hundred bytes.
const maxStateFile = 1 << 20

// ReadStateFile reads a State that WriteStateFile wrote.
func ReadStateFile(path string) (State, error) {
	var st State
	path, err := localStatePath(path)
	if err != nil {
		return st, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return st, fmt.Errorf("reading iterator state: %w", err)
	}
	if fi.Size() > maxStateFile {
		return st, fmt.Errorf("iterator state %s is %d bytes: not a state file", path, fi.Size())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return st, fmt.Errorf("reading iterator state: %w", err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("iterator state %s: %w", path, err)
	}
	return st, nil
}

// ReadStateFile, CheckStateFile and WriteStateFile take a local path or a
// file:// URL; other URLs are refused with ErrStateURL.

// CheckStateFile reports whether WriteStateFile could write path
// (loader.CheckSavePath: its directory exists and takes a new file),
// without writing it, so that a run saving its state at the end refuses a
// bad path before it reads anything.
func CheckStateFile(path string) error {
	path, err := localStatePath(path)
	if err != nil {
		return err
	}
	if err := loader.CheckSavePath(path); err != nil {
		return fmt.Errorf("iterator state: %w", err)
	}
	return nil
}

// WriteStateFile writes st as JSON atomically (loader.SaveFile: a
// temporary file in the same directory, fsync, rename, directory fsync),
// so a crash never leaves a torn state.
func WriteStateFile(ctx context.Context, path string, st State) error {
	path, err := localStatePath(path)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if _, err := loader.SaveFile(ctx, path, loader.HostMemory(append(b, '\n')), loader.SaveOptions{Direct: loader.DirectOff}); err != nil {
		return fmt.Errorf("writing iterator state %s: %w", path, err)
	}
	return nil
}
