package vfs_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"os"
	"path/filepath"

	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/rdmafs"
	"github.com/gdsload/gdsload/vfs"
	"github.com/gdsload/gdsload/vfs/rdmafsfs"
)

// serveExport starts an rdmafs server exporting dir on a free loopback
// port, as `gdsload serve --root dir --listen 127.0.0.1:0` does, and
// returns its URL prefix and a function that stops it.
func serveExport(dir string, token []byte) (string, func()) {
	srv, err := rdmafs.NewServer(dir, rdmafs.WithServerToken(token), rdmafs.WithServerLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	return "rdmafs://" + ln.Addr().String(), func() { cancel(); <-done }
}

// Load a file from an rdmafs server into host memory through the engine:
// open it by URL, lay it out as a job into a buffer, load, and close in
// the opposite order.
func Example_loadRemoteFile() {
	dir, _ := os.MkdirTemp("", "export-")
	defer os.RemoveAll(dir)
	_ = os.WriteFile(filepath.Join(dir, "weights.bin"), []byte("sixteen bytes!!\n"), 0o644)
	token := []byte("example-token-0123456789abcdef")
	server, stop := serveExport(dir, token)
	defer stop()

	ctx := context.Background()
	m, err := vfs.New(rdmafsfs.With(rdmafs.WithToken(token)))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close() // hangs up the client, after the file is done with

	f, err := m.Open(ctx, server+"/weights.bin")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, f.Size())
	res, err := loader.Load(ctx, []loader.Job{loader.WholeFile(f, loader.NewHostBuffer(buf))},
		loader.Options{Checksum: loader.ChecksumCRC32C})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d bytes by the %s route, crc32c %s: %q\n", res.Bytes, res.Route, res.Files[0].CRC32C, buf)
	// Output: 16 bytes by the host route, crc32c b73128d9: "sixteen bytes!!\n"
}
