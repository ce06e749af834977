package main

import (
	"fmt"
	"log/slog"

	"github.com/spf13/pflag"

	"github.com/gdsload/gdsload/objstore"
	"github.com/gdsload/gdsload/rdmafs"
	"github.com/gdsload/gdsload/vfs"
	"github.com/gdsload/gdsload/vfs/rdmafsfs"
	"github.com/gdsload/gdsload/vfs/s3fs"
)

// remoteFlags are the flags of commands that read rdmafs:// and s3:// URLs.
type remoteFlags struct {
	tokenFile   string
	connections int
	crc         bool
	transport   string
	s3Deadline  string     // "": objstore's default ($GDSLOAD_S3_DEADLINE, else 30s)
	cache       cacheFlags // cache.go
}

func (r *remoteFlags) addFlags(f *pflag.FlagSet) {
	f.StringVar(&r.tokenFile, "token-file", "", "file holding the rdmafs shared secret (default: $GDSLOAD_TOKEN)")
	f.IntVar(&r.connections, "connections", rdmafs.DefaultConnections, "TCP connections per rdmafs server")
	f.StringVar(&r.transport, "transport", "tcp", "rdmafs transport: tcp, or verbs (RDMA into registered host or GPU memory; needs rdma-core and an RDMA device)")
	f.BoolVar(&r.crc, "crc", true, "have the rdmafs server send a CRC32C of each read and check it (off: the server may use sendfile)")
	f.StringVar(&r.s3Deadline, "s3-deadline", "", fmt.Sprintf("how long one failing s3:// request is retried, such as 90s or 2m; 0 disables retries (default: $%s, else %v)", objstore.DeadlineEnv, objstore.DefaultRetryDeadline))
}

// s3Options are the s3:// client options the flags set.
func (r *remoteFlags) s3Options() ([]objstore.Option, error) {
	if r.s3Deadline == "" {
		return nil, nil
	}
	d, err := objstore.ParseDeadline(r.s3Deadline)
	if err != nil {
		return nil, usagef("--s3-deadline %q: want a duration such as 90s or 2m, or a number of seconds", r.s3Deadline)
	}
	return []objstore.Option{objstore.WithRetryDeadline(d)}, nil
}

// mux is what the command opens its paths and URLs through; rdmafs
// settings are read only when a URL needs them, and its clients log to log.
func (r *remoteFlags) mux(log *slog.Logger, paths ...string) (*vfs.Mux, error) {
	remote := false
	for _, p := range paths {
		remote = remote || vfs.IsURL(p)
	}
	s3opts, err := r.s3Options()
	if err != nil {
		return nil, err
	}
	if !remote {
		return vfs.New()
	}
	cached, err := r.cache.options()
	if err != nil {
		return nil, err
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
	return vfs.New(append(cached, rdmafsfs.With(opts...), s3fs.With(s3opts...))...)
}
