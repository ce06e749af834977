// Command benchclient reads one remote file through the rdmafs client as a
// loader would (sequential windows, each split and pipelined over the
// connections) and discards the data. scripts/bench-rdmafs.sh times it from
// outside against nginx+curl and iperf3.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/gdsload/gdsload/rdmafs"
)

func main() {
	url := flag.String("url", "", "rdmafs://host:port/path of the file to read")
	tokenFile := flag.String("token-file", "", "token file (else $GDSLOAD_TOKEN, else none)")
	conns := flag.Int("conns", 4, "connections")
	perConn := flag.Int("per-conn", 4, "outstanding requests per connection")
	chunk := flag.Int("chunk", 4<<20, "request size in bytes")
	window := flag.Int("window", 64<<20, "bytes per ReadAt call")
	crc := flag.Bool("crc", true, "verify CRC32C")
	flag.Parse()
	if err := run(*url, *tokenFile, *conns, *perConn, *chunk, *window, *crc); err != nil {
		fmt.Fprintln(os.Stderr, "benchclient:", err)
		os.Exit(1)
	}
}

func run(rawURL, tokenFile string, conns, perConn, chunk, window int, crc bool) error {
	u, err := rdmafs.ParseURL(rawURL)
	if err != nil {
		return err
	}
	var tok []byte
	if tokenFile != "" {
		if tok, err = rdmafs.ReadTokenFile(tokenFile); err != nil {
			return err
		}
	} else if v := os.Getenv("GDSLOAD_TOKEN"); v != "" {
		tok = []byte(v)
	}
	ctx := context.Background()
	cl, err := rdmafs.Dial(ctx, u.Addr, rdmafs.WithToken(tok), rdmafs.WithConnections(conns),
		rdmafs.WithRequestsPerConn(perConn), rdmafs.WithChunkSize(int64(chunk)), rdmafs.WithCRC(crc))
	if err != nil {
		return err
	}
	defer cl.Close()
	f, err := cl.Open(ctx, u.Path)
	if err != nil {
		return err
	}
	buf := make([]byte, window)
	start := time.Now()
	var total int64
	for off := int64(0); off < f.Size(); off += int64(window) {
		n, err := f.ReadAt(buf, off)
		total += int64(n)
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	if total != f.Size() {
		return fmt.Errorf("read %d bytes, file has %d", total, f.Size())
	}
	d := time.Since(start)
	fmt.Fprintf(os.Stderr, "%d bytes in %v: %.2f GiB/s\n", total, d, float64(total)/d.Seconds()/(1<<30))
	return nil
}
