package stage_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"os"
	"path/filepath"

	"github.com/gdsload/gdsload/rdmafs"
	"github.com/gdsload/gdsload/stage"
	"github.com/gdsload/gdsload/vfs"
	"github.com/gdsload/gdsload/vfs/rdmafsfs"
)

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

// Stage a folder from an rdmafs server onto local disk, verified and
// atomic; a second run finds everything staged and copies nothing.
func Example_stageRemoteFolder() {
	export, _ := os.MkdirTemp("", "export-")
	defer os.RemoveAll(export)
	_ = os.MkdirAll(filepath.Join(export, "ckpt", "optim"), 0o755)
	_ = os.WriteFile(filepath.Join(export, "ckpt", "model.bin"), make([]byte, 5<<20), 0o644)
	_ = os.WriteFile(filepath.Join(export, "ckpt", "optim", "state.bin"), []byte("state"), 0o644)
	token := []byte("example-token-0123456789abcdef")
	server, stop := serve(export, token)
	defer stop()
	dest, _ := os.MkdirTemp("", "nvme-")
	defer os.RemoveAll(dest)

	ctx := context.Background()
	m, err := vfs.New(rdmafsfs.With(rdmafs.WithToken(token)))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	for run := 1; run <= 2; run++ {
		entries, err := stage.Expand(ctx, []string{server + "/ckpt/"}, stage.Options{FS: m})
		if err != nil {
			log.Fatal(err)
		}
		s, err := stage.Open(dest, stage.Options{FS: m})
		if err != nil {
			log.Fatal(err)
		}
		plan, err := s.Plan(ctx, entries)
		if err == nil {
			var res *stage.Result
			if res, err = s.Run(ctx, plan); err == nil {
				fmt.Printf("run %d: %d files, %d copied, %d already staged\n", run, res.Files, res.Copied, res.Skipped)
			}
		}
		if cerr := s.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			log.Fatal(err)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dest, "optim", "state.bin"))
	fmt.Printf("%s\n", b)
	// Output:
	// run 1: 2 files, 2 copied, 0 already staged
	// run 2: 2 files, 0 copied, 2 already staged
	// state
}
