package stage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gdsload/gdsload/internal/fileops"
	"github.com/gdsload/gdsload/internal/fileops/errorfs"
	"github.com/gdsload/gdsload/loader"
)

// mountTmpfs mounts a tmpfs of the given size or skips the test.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if os.Geteuid() != 0 {
		t.Skip("mounting a size-limited tmpfs needs root")
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// requireOnlyComplete fails unless every file under dst (outside the
// sidecar) is a complete copy of its source.
func requireOnlyComplete(t *testing.T, src, dst string) int {
	t.Helper()
	n := 0
	require.NoError(t, filepath.Walk(dst, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() || strings.Contains(p, SidecarName) {
			return err
		}
		rel, _ := filepath.Rel(dst, p)
		require.Equal(t, fileSHA(t, filepath.Join(src, rel)), fileSHA(t, p), "partial file %s under its final name", rel)
		n++
		return nil
	}))
	return n
}

func TestStageNoSpace(t *testing.T) {
	dst := mountTmpfs(t, "8m")
	src := t.TempDir()
	for i := range 6 {
		writeFile(t, src, fmt.Sprintf("f%d.bin", i), 2<<20+100, uint64(i))
	}

	// Checked before anything is copied.
	_, err := stage(t, dst, Options{}, src)
	var ns *loader.NoSpaceError
	require.ErrorAs(t, err, &ns)
	require.ErrorContains(t, err, fmt.Sprintf("destination %s is full: needed %d bytes more, free ", dst, 6*(2<<20+100)))
	require.Equal(t, 0, requireOnlyComplete(t, src, dst))

	// Met while writing (the check is off, as when something else fills
	// the disk meanwhile): complete files stay, nothing partial or
	// temporary is left.
	_, err = stage(t, dst, Options{Workers: 2, skipSpaceCheck: true}, src)
	require.ErrorAs(t, err, &ns)
	require.True(t, errors.Is(err, unix.ENOSPC))
	require.ErrorContains(t, err, "destination "+dst+" is full: needed ")
	require.Less(t, ns.Free, int64(2<<20+100))
	requireClean(t, dst)
	requireOnlyComplete(t, src, dst)
}

// requireJournalMatches fails unless every file under dst (outside the
// sidecar) has a journal record that a rerun trusts (same size, inode and
// modification time), and every record names such a file.
func requireJournalMatches(t *testing.T, dst string) {
	t.Helper()
	recs, err := readJournal(filepath.Join(dst, SidecarName, journalName))
	require.NoError(t, err)
	files := map[string]bool{}
	require.NoError(t, filepath.Walk(dst, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() || strings.Contains(p, SidecarName) {
			return err
		}
		rel, _ := filepath.Rel(dst, p)
		files[filepath.ToSlash(rel)] = true
		r, ok := recs[filepath.ToSlash(rel)]
		require.True(t, ok, "%s staged without a journal record", rel)
		st := fi.Sys().(*syscall.Stat_t)
		require.Equal(t, r.Size, fi.Size(), rel)
		require.Equal(t, r.Ino, st.Ino, rel)
		require.Equal(t, r.DestMTimeNs, fi.ModTime().UnixNano(), rel)
		return nil
	}))
	for rel := range recs {
		require.True(t, files[rel], "journal records %s, which is not staged", rel)
	}
}

// ENOSPC in the middle of a file, from a write or from its fsync, fails
// the stage with a *NoSpaceError; nothing partial or temporary is left,
// every file under its final name is complete and recorded, the journal
// records nothing else, and a rerun copies the rest and skips the rest.
func TestStageNoSpaceMidFile(t *testing.T) {
	src := t.TempDir()
	const n = 6
	for i := range n {
		writeFile(t, src, fmt.Sprintf("f%d.bin", i), 3<<19+7*i, uint64(i))
	}
	for _, tc := range []struct {
		name string
		at   errorfs.Kind
		nth  int
	}{
		{"pwrite", errorfs.OpPwrite, 2},
		{"fsync", errorfs.OpSync, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := t.TempDir()
			seen := 0
			var mu sync.Mutex
			// One worker: batches of 4 files, so the first batch is
			// staged while the fault hits f4 in the second.
			opts := Options{Workers: 1, ChunkSize: 1 << 20}
			opts.fs = errorfs.Wrap(fileops.Default(), func(op *errorfs.Op) error {
				if op.Kind != tc.at || !strings.HasPrefix(filepath.Base(op.Path), ".f4.bin.") {
					return nil
				}
				mu.Lock()
				defer mu.Unlock()
				if seen++; seen == tc.nth {
					return unix.ENOSPC
				}
				return nil
			})
			_, err := stage(t, dst, opts, src)
			var ns *loader.NoSpaceError
			require.ErrorAs(t, err, &ns)
			require.True(t, errors.Is(err, unix.ENOSPC))
			require.NoFileExists(t, filepath.Join(dst, "f4.bin"))
			requireClean(t, dst)
			staged := requireOnlyComplete(t, src, dst)
			require.Less(t, staged, n)
			requireJournalMatches(t, dst)

			res, err := stage(t, dst, Options{}, src)
			require.NoError(t, err)
			require.Equal(t, staged, res.Skipped)
			require.Equal(t, n-staged, res.Copied)
			require.Equal(t, n, requireOnlyComplete(t, src, dst))
			requireJournalMatches(t, dst)
		})
	}
}

// Stage writes each file, fsyncs it, records it in the journal and syncs
// the journal, renames it and fsyncs its directory, in that order
// (errorfs.CheckPublished fails when any step is missing or out of
// order), for files at the top and in subdirectories, empty ones too.
func TestStageDurableOrder(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	rels := []string{"a.bin", "empty.bin", "sub/b.bin", "sub/deeper/c.bin"}
	sizes := []int{3<<20 + 5, 0, 1 << 20, 4097}
	for i, rel := range rels {
		writeFile(t, src, rel, sizes[i], uint64(i))
	}
	var log errorfs.Log
	opts := Options{Workers: 2, ChunkSize: 1 << 20, fs: errorfs.Wrap(fileops.Default(), log.Record)}
	res, err := stage(t, dst, opts, src)
	require.NoError(t, err)
	require.Equal(t, len(rels), res.Copied)
	jpath := filepath.Join(dst, SidecarName, journalName)
	for _, rel := range rels {
		final := filepath.Join(dst, filepath.FromSlash(rel))
		require.NoError(t, errorfs.CheckPublished(log.Ops(), final, &errorfs.Journal{Path: jpath, Record: []byte(`"rel":"` + rel + `"`)}))
	}
	requireSame(t, src, dst, rels...)
}
