package rdmafs_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/gdsload/gdsload/rdmafs"
)

// Reading a remote file into memory: Dial, Open, then ReadAt, which splits
// large reads into chunks pipelined over the connections and retries lost
// connections until the retry deadline.
func Example() {
	ctx := context.Background()
	u, err := rdmafs.ParseURL("rdmafs://storage-1:7420/ckpt/model-00001.safetensors")
	if err != nil {
		log.Fatal(err)
	}
	tok, err := rdmafs.ReadTokenFile(os.Getenv("HOME") + "/.gdsload-token")
	if err != nil {
		log.Fatal(err)
	}
	cl, err := rdmafs.Dial(ctx, u.Addr, rdmafs.WithToken(tok), rdmafs.WithConnections(4))
	if errors.Is(err, rdmafs.ErrAuth) {
		log.Fatal("token rejected: ", err)
	} else if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()
	f, err := cl.Open(ctx, u.Path)
	if err != nil {
		log.Fatal(err)
	}
	buf := make([]byte, f.Size())
	if _, err := f.ReadAt(buf, 0); err != nil && err != io.EOF {
		log.Fatal(err)
	}
	fmt.Println(len(buf))
}

// Serving a directory until ctx is cancelled (SIGTERM in gdsload serve).
func ExampleServer_Serve() {
	ctx := context.Background()
	srv, err := rdmafs.NewServer("/data/ckpt", rdmafs.WithServerToken([]byte(os.Getenv("GDSLOAD_TOKEN"))))
	if err != nil {
		log.Fatal(err)
	}
	ln, err := rdmafs.TCP().Listen(ctx, ":7420")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("listening on", ln.Addr())
	if err := srv.Serve(ctx, ln); err != nil {
		log.Fatal(err)
	}
}
