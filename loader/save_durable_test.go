package loader

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gdsload/gdsload/internal/durable"
	"github.com/gdsload/gdsload/internal/fileops"
	"github.com/gdsload/gdsload/internal/fileops/errorfs"
)

// SaveFile writes the temporary file, fsyncs it, renames it into place
// and fsyncs the directory, in that order (errorfs.CheckPublished fails
// when any step is missing or out of order), on every route a host
// source takes.
func TestSaveFileDurableOrder(t *testing.T) {
	data := randomBytes(5<<20+123, 3)
	for _, mode := range []DirectMode{DirectAuto, DirectOff} {
		t.Run(mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			final := filepath.Join(dir, "out.bin")
			var log errorfs.Log
			_, err := SaveFile(context.Background(), final, HostMemory(data),
				SaveOptions{Direct: mode, ChunkSize: 1 << 20, fs: errorfs.Wrap(fileops.Default(), log.Record)})
			require.NoError(t, err)
			require.NoError(t, errorfs.CheckPublished(log.Ops(), final, nil))
			got, err := os.ReadFile(final)
			require.NoError(t, err)
			require.Equal(t, data, got)
		})
	}
}

// A full disk met in the middle of the file, by a write or by the fsync,
// fails the save with a *NoSpaceError and leaves nothing under the final
// name: no file where there was none, the old file where there was one,
// and no temporary file.
func TestSaveFileNoSpaceMidFile(t *testing.T) {
	data := randomBytes(6<<20, 4)
	for _, tc := range []struct {
		name string
		at   errorfs.Kind
		n    int // fail the n-th such operation on the temporary file
	}{
		{"pwrite", errorfs.OpPwrite, 3},
		{"fsync", errorfs.OpSync, 1},
	} {
		for _, existing := range []bool{false, true} {
			t.Run(tc.name+map[bool]string{false: "/new", true: "/replacing"}[existing], func(t *testing.T) {
				dir := t.TempDir()
				final := filepath.Join(dir, "out.bin")
				old := []byte("the previous contents")
				if existing {
					require.NoError(t, os.WriteFile(final, old, 0o644))
				}
				seen := 0
				fsys := errorfs.Wrap(fileops.Default(), func(op *errorfs.Op) error {
					if op.Kind == tc.at && durable.IsTempName(filepath.Base(op.Path)) {
						if seen++; seen == tc.n {
							return syscall.ENOSPC
						}
					}
					return nil
				})
				_, err := SaveFile(context.Background(), final, HostMemory(data),
					SaveOptions{ChunkSize: 1 << 20, Workers: 1, fs: fsys})
				var ns *NoSpaceError
				require.ErrorAs(t, err, &ns)
				require.True(t, errors.Is(err, syscall.ENOSPC))
				require.GreaterOrEqual(t, seen, tc.n, "the fault was injected")
				ents, err := os.ReadDir(dir)
				require.NoError(t, err)
				if !existing {
					require.Empty(t, ents, "nothing under the final name, no temporary file")
					return
				}
				require.Len(t, ents, 1, "only the old file, no temporary file")
				got, err := os.ReadFile(final)
				require.NoError(t, err)
				require.Equal(t, old, got, "the old file is untouched")
			})
		}
	}
}
