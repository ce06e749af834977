package stage

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A destination written as a URL is refused by every entry point, and no
// local folder named after its scheme appears.
func TestURLDestinationRefused(t *testing.T) {
	src := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(src, "f.bin"), []byte("x"), 0o644))
	t.Chdir(t.TempDir())
	for _, dest := range []string{"s3://models/upload/", "rdmafs://127.0.0.1:7420/x/", "S3://models/upload"} {
		t.Run(dest, func(t *testing.T) {
			require.ErrorIs(t, CheckDestination([]string{src}, dest), ErrURLDestination)
			s, err := Open(dest, Options{})
			if s != nil {
				s.Close()
			}
			require.ErrorIs(t, err, ErrURLDestination)
			assert.Contains(t, err.Error(), dest)
			entries, err := Expand(context.Background(), []string{src}, Options{})
			require.NoError(t, err)
			_, err = Preview(context.Background(), dest, entries, Options{})
			require.ErrorIs(t, err, ErrURLDestination)
			left, err := os.ReadDir(".")
			require.NoError(t, err)
			assert.Empty(t, left, "a refused URL destination left a local folder")
		})
	}
}

// A file:// URL names a local directory, which is staged into.
func TestFileURLDestination(t *testing.T) {
	src := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(src, "f.bin"), []byte("hello"), 0o644))
	dst := filepath.Join(t.TempDir(), "out")
	require.NoError(t, CheckDestination([]string{src}, "file://"+dst))
	s, err := Open("file://"+dst, Options{})
	require.NoError(t, err)
	defer s.Close()
	entries, err := Expand(context.Background(), []string{src}, Options{})
	require.NoError(t, err)
	p, err := s.Plan(context.Background(), entries)
	require.NoError(t, err)
	res, err := s.Run(context.Background(), p)
	require.NoError(t, err)
	assert.Equal(t, dst, res.Dest)
	b, err := os.ReadFile(filepath.Join(dst, "f.bin"))
	require.NoError(t, err)
	assert.Equal(t, "hello", string(b))
}
