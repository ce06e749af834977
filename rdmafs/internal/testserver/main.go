// Command testserver runs an rdmafs server as a real process for the
// end-to-end tests, independent of the gdsload CLI. It prints exactly one
// line, "listening on HOST:PORT", once ready, and drains on SIGTERM/SIGINT.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/gdsload/gdsload/rdmafs"
)

func main() {
	root := flag.String("root", "", "directory to export")
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	tokenFile := flag.String("token-file", "", "file holding the shared token")
	insecure := flag.Bool("insecure-no-token", false, "run without authentication")
	flag.Parse()
	if err := run(*root, *listen, *tokenFile, *insecure); err != nil {
		fmt.Fprintln(os.Stderr, "testserver:", err)
		os.Exit(1)
	}
}

func run(root, listen, tokenFile string, insecure bool) error {
	opts := []rdmafs.ServerOption{rdmafs.WithServerLogger(slog.New(slog.NewTextHandler(os.Stderr, nil)))}
	if insecure {
		opts = append(opts, rdmafs.WithInsecureNoToken())
	}
	if tokenFile != "" {
		tok, err := rdmafs.ReadTokenFile(tokenFile)
		if err != nil {
			return err
		}
		opts = append(opts, rdmafs.WithServerToken(tok))
	}
	srv, err := rdmafs.NewServer(root, opts...)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ln, err := rdmafs.TCP().Listen(ctx, listen)
	if err != nil {
		return err
	}
	fmt.Printf("listening on %s\n", ln.Addr())
	return srv.Serve(ctx, ln)
}
