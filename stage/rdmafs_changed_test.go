package stage

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gdsload/gdsload/internal/rdmafstest"
	"github.com/gdsload/gdsload/rdmafs"
)

// A file rewritten on the rdmafs server while it is staged (its first and
// last KiB overwritten in place, as dd conv=notrunc does, after the first
// chunk arrived) fails that file, as a local source does, instead of being
// committed with the digest of the torn bytes received.
func TestStageRdmafsSourceChangedDuringRead(t *testing.T) {
	export, dst := t.TempDir(), t.TempDir()
	const size = 4 << 20
	writeFile(t, export, "mut.bin", size, 1)
	old := time.Now().Add(-time.Hour) // the rewrite's time differs at any timestamp granularity
	require.NoError(t, os.Chtimes(filepath.Join(export, "mut.bin"), old, old))
	remote := rdmafstest.Serve(t, export)
	m := remoteFS(t)

	var once sync.Once
	var rewriteErr error
	rewrite := func(int64) {
		once.Do(func() {
			f, err := os.OpenFile(filepath.Join(export, "mut.bin"), os.O_WRONLY, 0)
			if err != nil {
				rewriteErr = err
				return
			}
			defer f.Close()
			zeros := make([]byte, 1024)
			if _, err := f.WriteAt(zeros, 0); err != nil {
				rewriteErr = err
				return
			}
			_, rewriteErr = f.WriteAt(zeros, size-1024)
		})
	}
	opts := Options{FS: m, Workers: 1, ChunkSize: 256 << 10, OnProgress: rewrite}
	_, err := stage(t, dst, opts, remote+"/mut.bin")
	require.NoError(t, rewriteErr)
	var partial *PartialError
	require.ErrorAs(t, err, &partial, "the torn file is not staged")
	require.Len(t, partial.Failed, 1)
	assert.Equal(t, "mut.bin", partial.Failed[0].Name)
	assert.Contains(t, partial.Failed[0].Error, "changed on the server while it was read")
	assert.NoFileExists(t, filepath.Join(dst, "mut.bin"))

	// A rerun stages the file as it now is.
	res, err := stage(t, dst, Options{FS: m}, remote+"/mut.bin")
	require.NoError(t, err)
	assert.Equal(t, 1, res.Copied)
	assert.Equal(t, fileSHA(t, filepath.Join(export, "mut.bin")), fileSHA(t, filepath.Join(dst, "mut.bin")))
}

// Verify sees a size, a modification time or a removal after the open.
func TestRdmafsFileVerify(t *testing.T) {
	export := t.TempDir()
	remote := rdmafstest.Serve(t, export)
	m := remoteFS(t)
	old := time.Now().Add(-time.Hour)
	for _, tc := range []struct {
		name   string
		change func(p string) error
		want   string
	}{
		{"untouched", func(string) error { return nil }, ""},
		{"grown", func(p string) error {
			f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			_, err = f.Write([]byte("more"))
			return errors.Join(err, f.Close())
		}, "size 4100, was 4096"},
		{"touched", func(p string) error { return os.Chtimes(p, time.Now(), time.Now()) }, "modified at"},
		{"removed", os.Remove, "removed on the server"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(export, tc.name+".bin")
			require.NoError(t, os.WriteFile(p, make([]byte, 4096), 0o644))
			require.NoError(t, os.Chtimes(p, old, old))
			f, err := m.Open(t.Context(), remote+"/"+tc.name+".bin")
			require.NoError(t, err)
			defer f.Close()
			require.NoError(t, tc.change(p))
			v, ok := f.(interface{ Verify() error })
			require.True(t, ok, "an rdmafs file is a loader.Verifier")
			err = v.Verify()
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, rdmafs.ErrChanged)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
