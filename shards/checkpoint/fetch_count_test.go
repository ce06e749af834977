package checkpoint

import (
	"context"
	"io/fs"
	"sync/atomic"
	"testing"

	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countingScheme serves count://any/<absolute path> from the local file
// system through files that count the bytes their ReadAt returns. The
// files have no capability beyond vfs.File, so every read of the loader
// and of the header parser goes through ReadAt: an independent count of
// what was read.
type countingScheme struct{ n *atomic.Int64 }

func (s countingScheme) FS(context.Context, string) (vfs.FS, error) { return countingFS(s), nil }

type countingFS struct{ n *atomic.Int64 }

func (c countingFS) Stat(ctx context.Context, name string) (fs.FileInfo, error) {
	return vfs.Local().Stat(ctx, "/"+name)
}

func (c countingFS) List(ctx context.Context, name string) ([]fs.FileInfo, error) {
	return vfs.Local().List(ctx, "/"+name)
}

func (c countingFS) Open(ctx context.Context, name string) (vfs.File, error) {
	f, err := vfs.Local().Open(ctx, "/"+name)
	if err != nil {
		return nil, err
	}
	return countingFile{File: f, n: c.n}, nil
}

type countingFile struct {
	vfs.File
	n *atomic.Int64
}

func (f countingFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	f.n.Add(int64(n))
	return n, err
}

// Opening a 1 GiB checkpoint and fetching one small tensor reads under
// 1 MiB, counted by the files themselves, and the library's count agrees.
func TestFetchReadsUnder1MiBCountedByTheFiles(t *testing.T) {
	p, vals := writeSparse(t, 1<<30)
	var n atomic.Int64
	m, err := vfs.New(vfs.WithScheme("count", countingScheme{&n}))
	require.NoError(t, err)
	defer m.Close()
	ck, err := Open(context.Background(), "count://x"+p, Options{FS: m})
	require.NoError(t, err)
	defer ck.Close()
	f, err := ck.Fetch(context.Background(), []Request{{Name: "small"}}, HostAllocator, loader.Options{}, FetchOptions{})
	require.NoError(t, err)
	defer f.Close()
	got, err := viewPiece[float32](f.Pieces[0])
	require.NoError(t, err)
	assert.Equal(t, vals, got)
	assert.Equal(t, int64(16), f.BytesRead, "the tensor's bytes alone")
	assert.Less(t, n.Load(), int64(1<<20), "bytes the files returned")
	assert.Equal(t, ck.HeaderBytes()+f.BytesRead, n.Load(), "the library's count is what the files returned")
}
