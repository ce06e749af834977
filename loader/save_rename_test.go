package loader

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSaveFileOntoADirectory: a save whose path is a directory fails at
// the rename (os.Rename's EEXIST), its message naming both the temporary
// file renamed and the destination, and leaves nothing behind.
func TestSaveFileOntoADirectory(t *testing.T) {
	dir := t.TempDir()
	dst := filepath.Join(dir, "ckpt")
	require.NoError(t, os.Mkdir(dst, 0o755))
	_, err := SaveFile(context.Background(), dst, HostMemory([]byte("data")), SaveOptions{})
	require.ErrorIs(t, err, syscall.EEXIST)
	require.ErrorContains(t, err, "renaming "+filepath.Join(dir, ".ckpt.gdsload-"))
	require.ErrorContains(t, err, " to "+dst)
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, ents, 1)
}
