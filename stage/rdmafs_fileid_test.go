package stage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gdsload/gdsload/internal/rdmafstest"
)

// ctimeOf is the change time the server's file system gives p.
func ctimeOf(t *testing.T, p string) time.Time {
	t.Helper()
	fi, err := os.Stat(p)
	require.NoError(t, err)
	st, ok := fi.Sys().(*syscall.Stat_t)
	require.True(t, ok)
	return time.Unix(st.Ctim.Sec, st.Ctim.Nsec)
}

// A file changed on the rdmafs server while it is staged, in a way that
// keeps its size and modification time, fails that file, and only it
// (a partial stage, exit code 3), as a local source's does: rewritten in
// place with the time set back (os.Chtimes, touch -d), or replaced by
// rename with a copy of the same size and time.
func TestStageRdmafsSourceChangedKeepingSizeAndMtime(t *testing.T) {
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	const size = 2 << 20
	for _, tc := range []struct {
		name   string
		change func(p string) error
	}{
		{"rewritten, mtime restored", func(p string) error {
			f, err := os.OpenFile(p, os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			_, werr := f.WriteAt(make([]byte, 1024), size-1024)
			if err := f.Close(); err != nil || werr != nil {
				return errors.Join(werr, err)
			}
			return os.Chtimes(p, old, old)
		}},
		{"replaced by rename", func(p string) error {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			clear(b[:1024])
			if err := os.WriteFile(p+".new", b, 0o644); err != nil {
				return err
			}
			if err := os.Chtimes(p+".new", old, old); err != nil {
				return err
			}
			return os.Rename(p+".new", p)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			export, dst := t.TempDir(), t.TempDir()
			// A batch whose load fails is loaded again file by file, which
			// stages a file changed once consistently, in its new version:
			// four files fill the first batch of one worker, so mut.bin is
			// loaded alone, and its failure is its own.
			sources := make([]string, 0, 5)
			for i := range 4 {
				writeFile(t, export, fmt.Sprintf("a%d.bin", i), 64<<10, uint64(i+2))
				sources = append(sources, fmt.Sprintf("a%d.bin", i))
			}
			mut := writeFile(t, export, "mut.bin", size, 1)
			sources = append(sources, "mut.bin")
			require.NoError(t, os.Chtimes(mut, old, old))
			// File systems stamp change times from a coarse clock: wait
			// until a change made now gets a later one than the setup's.
			setup := ctimeOf(t, mut)
			probe := filepath.Join(t.TempDir(), "probe")
			require.NoError(t, os.WriteFile(probe, nil, 0o644))
			require.Eventually(t, func() bool {
				return os.Chmod(probe, 0o600) == nil && os.Chmod(probe, 0o644) == nil && ctimeOf(t, probe).After(setup)
			}, 5*time.Second, time.Millisecond)
			remote := rdmafstest.Serve(t, export)
			m := remoteFS(t)

			var once sync.Once
			var changeErr error
			var changed bool
			// Only mut.bin has full 256 KiB chunks (the others are one of
			// 64 KiB each): change it once its first chunk has arrived.
			opts := Options{FS: m, Workers: 1, ChunkSize: 256 << 10, OnProgress: func(n int64) {
				if n == 256<<10 {
					once.Do(func() { changeErr, changed = tc.change(mut), true })
				}
			}}
			for i, s := range sources {
				sources[i] = remote + "/" + s
			}
			_, err := stage(t, dst, opts, sources...)
			require.True(t, changed, "the file was changed during the stage")
			require.NoError(t, changeErr)
			fi, serr := os.Stat(mut)
			require.NoError(t, serr)
			require.Equal(t, int64(size), fi.Size(), "the change keeps the size")
			require.True(t, fi.ModTime().Equal(old), "the change keeps the modification time")

			var partial *PartialError
			require.ErrorAs(t, err, &partial, "the changed file is not staged")
			assert.False(t, partial.All(), "the unchanged files are staged: a partial stage")
			assert.Equal(t, 5, partial.Files)
			require.Len(t, partial.Failed, 1)
			assert.Equal(t, "mut.bin", partial.Failed[0].Name)
			assert.Contains(t, partial.Failed[0].Error, "changed on the server while it was read")
			assert.NoFileExists(t, filepath.Join(dst, "mut.bin"))
			for _, s := range sources[:4] {
				assert.FileExists(t, filepath.Join(dst, filepath.Base(s)))
			}
		})
	}
}
