package vfs_test

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gdsload/gdsload/vfs"
)

// OrNew hands a given Mux back untouched by done, and makes one for the
// call when given none, which done closes.
func TestOrNew(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
	for _, rel := range []string{"b.bin", "sub/a.bin"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, filepath.FromSlash(rel)), []byte(rel), 0o644))
	}

	own, err := vfs.New()
	require.NoError(t, err)
	defer own.Close()
	m, done, err := vfs.OrNew(own)
	require.NoError(t, err)
	assert.Same(t, own, m)
	done()
	rels, err := own.WalkRels(ctx, dir)
	require.NoError(t, err, "done left the caller's Mux open")
	assert.Equal(t, []string{"b.bin", "sub/a.bin"}, rels)

	mem := &memFS{files: map[string][]byte{"d/a.bin": []byte("a")}, made: new(atomic.Int64), closed: new(atomic.Int64), walks: new(atomic.Int64)}
	made, done, err := vfs.OrNew(nil, vfs.WithScheme("mem", memScheme{mem}))
	require.NoError(t, err)
	rels, err = made.WalkRels(ctx, "mem://x/d")
	require.NoError(t, err)
	assert.Equal(t, []string{"a.bin"}, rels)
	done()
	assert.EqualValues(t, 1, mem.closed.Load(), "done closed the Mux made for the call, and its file systems")
	_, err = made.Stat(ctx, "mem://x/d/a.bin")
	require.ErrorIs(t, err, vfs.ErrClosed)
}
