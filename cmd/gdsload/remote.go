package main

import (
	"fmt"
	"log/slog"

	"github.com/spf13/pflag"

	"github.com/gdsload/gdsload/rdmafs"
	"github.com/gdsload/gdsload/vfs"
	"github.com/gdsload/gdsload/vfs/rdmafsfs"
	_ "github.com/gdsload/gdsload/vfs/s3fs" // s3:// URLs, in every Mux vfs.New makes
)

// remoteFlags are the flags of commands that read rdmafs:// URLs.
type remoteFlags struct {
	tokenFile   string
	connections int
	crc         bool
	transport   string
}

func (r *remoteFlags) addFlags(f *pflag.FlagSet) {
	f.StringVar(&r.tokenFile, "token-file", "", "file holding the rdmafs shared secret (default: $GDSLOAD_TOKEN)")
	f.IntVar(&r.connections, "connections", rdmafs.DefaultConnections, "TCP connections per rdmafs server")
	f.StringVar(&r.transport, "transport", "tcp", "rdmafs transport: tcp, or verbs (RDMA into registered host or GPU memory; needs rdma-core and an RDMA device)")
	f.BoolVar(&r.crc, "crc", true, "have the rdmafs server send a CRC32C of each read and check it (off: the server may use sendfile)")
}

// mux is what the command opens its paths and URLs through; rdmafs
// settings are read only when a URL needs them, and its clients log to log.
func (r *remoteFlags) mux(log *slog.Logger, paths ...string) (*vfs.Mux, error) {
	remote := false
	for _, p := range paths {
		remote = remote || vfs.IsURL(p)
	}
	if !remote {
		return vfs.New()
	}
	if err := intFlagIn("--connections", r.connections, 1, rdmafs.MaxConnections); err != nil {
		return nil, err
	}
	token, err := rdmafs.ClientToken(r.tokenFile)
	if err != nil {
		return nil, err
	}
	tr, err := rdmafs.TransportByName(r.transport)
	if err != nil {
		return nil, fmt.Errorf("--transport %s: %w", r.transport, err)
	}
	opts := []rdmafs.Option{rdmafs.WithConnections(r.connections), rdmafs.WithCRC(r.crc), rdmafs.WithTransport(tr), rdmafs.WithLogger(log)}
	if token != nil {
		opts = append(opts, rdmafs.WithToken(token))
	}
	return vfs.New(rdmafsfs.With(opts...))
}
