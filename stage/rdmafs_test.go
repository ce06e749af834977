package stage

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/rdmafs"
	"github.com/stretchr/testify/require"
)

// remoteOpener opens rdmafs:// URLs through one client, as the command
// line does.
type remoteOpener struct{ cl *rdmafs.Client }

// remoteFile adds the modification time the stage journal needs.
type remoteFile struct{ *rdmafs.File }

func (f remoteFile) ModTime() time.Time { return f.Stat().ModTime() }

func (o remoteOpener) Open(ctx context.Context, name string) (loader.Source, error) {
	u, err := rdmafs.ParseURL(name)
	if err != nil {
		return nil, err
	}
	f, err := o.cl.Open(ctx, u.Path)
	if err != nil {
		return nil, err
	}
	return remoteFile{f}, nil
}

func TestStageFromRdmafsServer(t *testing.T) {
	export, dst := t.TempDir(), t.TempDir()
	for i := range 4 {
		writeFile(t, export, fmt.Sprintf("ckpt/shard-%02d.bin", i), 1<<20+i*1000, uint64(i))
	}
	token := []byte("stage-test-token-0123456789abcdef")
	srv, err := rdmafs.NewServer(rdmafs.ServerConfig{Root: export, Token: token, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	defer func() { cancel(); <-done }()

	cl, err := rdmafs.Dial(context.Background(), ln.Addr().String(), rdmafs.WithToken(token),
		rdmafs.WithTimeout(2*time.Second), rdmafs.WithRetryDeadline(300*time.Millisecond))
	require.NoError(t, err)
	defer cl.Close()

	pattern := "rdmafs://" + ln.Addr().String() + "/ckpt/shard-{00..03}.bin"
	opts := Options{Opener: remoteOpener{cl}, Workers: 4, ChunkSize: 256 << 10}
	res, err := stage(t, dst, opts, pattern)
	require.NoError(t, err)
	require.Equal(t, 4, res.Copied)
	for i := range 4 {
		name := fmt.Sprintf("shard-%02d.bin", i)
		require.Equal(t, fileSHA(t, filepath.Join(export, "ckpt", name)), fileSHA(t, filepath.Join(dst, name)), name)
	}

	// The remote modification time makes a rerun skip what is staged.
	res, err = stage(t, dst, opts, pattern)
	require.NoError(t, err)
	require.Zero(t, res.Copied)
	require.Equal(t, 4, res.Skipped)

	// A server that went away is an error naming the file; nothing partial stays.
	writeFile(t, export, "ckpt/shard-99.bin", 3<<20, 9)
	cancel()
	<-done
	done <- nil
	_, err = stage(t, t.TempDir(), Options{Opener: remoteOpener{cl}, Workers: 2}, "rdmafs://"+ln.Addr().String()+"/ckpt/shard-99.bin")
	require.Error(t, err)
	require.ErrorContains(t, err, "shard-99.bin")
}
