package iterator

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/gdsload/gdsload/loader"
)

// maxStateFile bounds a state file: a State is a few hundred bytes.
const maxStateFile = 1 << 20

// ReadStateFile reads a State that WriteStateFile wrote.
func ReadStateFile(path string) (State, error) {
	var st State
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

// CheckStateFile reports whether WriteStateFile could write path
// (loader.CheckSavePath: its directory exists and takes a new file),
// without writing it, so that a run saving its state at the end refuses a
// bad path before it reads anything.
func CheckStateFile(path string) error {
	if err := loader.CheckSavePath(path); err != nil {
		return fmt.Errorf("iterator state: %w", err)
	}
	return nil
}

// WriteStateFile writes st as JSON atomically (loader.SaveFile: a
// temporary file in the same directory, fsync, rename, directory fsync),
// so a crash never leaves a torn state.
func WriteStateFile(ctx context.Context, path string, st State) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if _, err := loader.SaveFile(ctx, path, loader.HostMemory(append(b, '\n')), loader.SaveOptions{Direct: loader.DirectOff}); err != nil {
		return fmt.Errorf("writing iterator state %s: %w", path, err)
	}
	return nil
}
