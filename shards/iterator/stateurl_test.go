package iterator

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStateFileURLs(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, u := range []string{"s3://models/state.json", "rdmafs://127.0.0.1:7420/state.json"} {
		require.ErrorIs(t, CheckStateFile(u), ErrStateURL)
		require.ErrorIs(t, WriteStateFile(context.Background(), u, State{}), ErrStateURL)
		_, err := ReadStateFile(u)
		require.ErrorIs(t, err, ErrStateURL)
	}
	left, err := os.ReadDir(".")
	require.NoError(t, err)
	assert.Empty(t, left)
	// A file:// URL is a local file.
	p := filepath.Join(t.TempDir(), "state.json")
	require.NoError(t, CheckStateFile("file://"+p))
	require.NoError(t, WriteStateFile(context.Background(), "file://"+p, State{Epoch: 3}))
	st, err := ReadStateFile("file://" + p)
	require.NoError(t, err)
	assert.Equal(t, int64(3), st.Epoch)
}
