package iterator_test

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"os"
	"path/filepath"

	"github.com/gdsload/gdsload/rdmafs"
	"github.com/gdsload/gdsload/shards/iterator"
	"github.com/gdsload/gdsload/vfs"
	"github.com/gdsload/gdsload/vfs/rdmafsfs"
)

// writeShard writes a WebDataset shard of samples key.txt.
func writeShard(path string, keys ...string) {
	f, err := os.Create(path)
	if err != nil {
		log.Fatal(err)
	}
	tw := tar.NewWriter(f)
	for _, k := range keys {
		_ = tw.WriteHeader(&tar.Header{Name: k + ".txt", Mode: 0o644, Size: int64(len(k))})
		_, _ = tw.Write([]byte(k))
	}
	_ = tw.Close()
	_ = f.Close()
}

// serve exports dir over rdmafs on a free loopback port, as `gdsload
// serve` does, until stop is called.
func serve(dir string, token []byte) (url string, stop func()) {
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

// Iterate a dataset on an rdmafs server as rank 0 of 2 (which reads the
// first of the two canonical partitions, here one shard), stop after two
// samples, save the state, and resume from it in a new iterator: the
// second run carries on exactly where the first stopped.
func Example_iterateRemoteAndResume() {
	dir, _ := os.MkdirTemp("", "wds-")
	defer os.RemoveAll(dir)
	writeShard(filepath.Join(dir, "shard-000.tar"), "a", "b", "c", "d")
	writeShard(filepath.Join(dir, "shard-001.tar"), "e", "f", "g", "h")
	token := []byte("example-token-0123456789abcdef")
	server, stop := serve(dir, token)
	defer stop()

	ctx := context.Background()
	m, err := vfs.New(rdmafsfs.With(rdmafs.WithToken(token)))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	ds, err := iterator.Open(ctx, server+"/", iterator.WithFS(m))
	if err != nil {
		log.Fatal(err)
	}
	opts := iterator.Options{Rank: 0, WorldSize: 2, Seed: 1}

	it, err := iterator.New(ds, opts)
	if err != nil {
		log.Fatal(err)
	}
	for s, err := range it.All(ctx) {
		if err != nil {
			log.Fatal(err)
		}
		txt, _ := s.Get("txt") // valid until the next sample
		fmt.Printf("first run: %s from %s\n", txt, s.Shard)
		if s.Position >= 2 {
			break
		}
	}
	state := it.State() // small and exact: store it with the checkpoint
	it.Close()

	resumed, err := iterator.New(ds, opts)
	if err != nil {
		log.Fatal(err)
	}
	defer resumed.Close()
	if err := resumed.Restore(state); err != nil {
		log.Fatal(err)
	}
	for s, err := range resumed.All(ctx) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("resumed: %s\n", s.Key)
	}
	// Output:
	// first run: a from shard-000.tar
	// first run: b from shard-000.tar
	// resumed: c
	// resumed: d
}
