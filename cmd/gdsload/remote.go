package main

import (
	"context"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/rdmafs"
)

// remoteOptions are the flags of commands that read rdmafs:// URLs, and
// the clients dialled for them (one per server, shared by its URLs).
type remoteOptions struct {
	tokenFile   string
	connections int
	crc         bool
	transport   string
	// device, when set, lets a verbs client land reads in GPU memory.
	device  rdmafs.DeviceMemory
	clients map[string]*rdmafs.Client
}

func (r *remoteOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&r.tokenFile, "token-file", "", "file holding the rdmafs shared secret (default: $GDSLOAD_TOKEN)")
	f.IntVar(&r.connections, "connections", 4, "TCP connections per rdmafs server")
	f.StringVar(&r.transport, "transport", "tcp", "rdmafs transport: tcp, or verbs (RDMA into registered host or GPU memory; needs a build with -tags rdma and an RDMA NIC)")
	f.BoolVar(&r.crc, "crc", true, "have the rdmafs server send a CRC32C of each read and check it (off: the server may use sendfile)")
}

func isRemote(p string) bool { return strings.HasPrefix(p, "rdmafs://") }

// client dials addr once per command.
func (r *remoteOptions) client(ctx context.Context, addr string) (*rdmafs.Client, error) {
	if c, ok := r.clients[addr]; ok {
		return c, nil
	}
	if err := intFlagIn("--connections", r.connections, 1, maxConnections); err != nil {
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
	opts := []rdmafs.Option{rdmafs.WithConnections(r.connections), rdmafs.WithCRC(r.crc), rdmafs.WithTransport(tr)}
	if r.device != nil {
		opts = append(opts, rdmafs.WithDeviceMemory(r.device))
	}
	if token != nil {
		opts = append(opts, rdmafs.WithToken(token))
	}
	c, err := rdmafs.Dial(ctx, addr, opts...)
	if err != nil {
		return nil, fmt.Errorf("rdmafs server %s: %w", addr, err)
	}
	if r.clients == nil {
		r.clients = map[string]*rdmafs.Client{}
	}
	r.clients[addr] = c
	return c, nil
}

// Close hangs up every client.
func (r *remoteOptions) Close() error {
	for addr, c := range r.clients {
		_ = c.Close()
		delete(r.clients, addr)
	}
	return nil
}

// verbs reports whether remote reads use RDMA.
func (r *remoteOptions) verbs() bool { return r.transport == "verbs" || r.transport == "rdma" }

// remoteSource names a remote file by its URL in results and errors.
type remoteSource struct {
	*rdmafs.File
	url string
}

func (s remoteSource) Name() string { return s.url }

// listRemote finds the file a URL names or, for a directory, every file
// below it in lexical order, through the client for its server; finding
// none is an error.
func listRemote(ctx context.Context, raw string, r *remoteOptions) (rdmafs.URL, *rdmafs.Client, []remoteFile, error) {
	u, err := rdmafs.ParseURL(raw)
	if err != nil {
		return u, nil, nil, usageError{err}
	}
	c, err := r.client(ctx, u.Addr)
	if err != nil {
		return u, nil, nil, err
	}
	files, err := remoteFiles(ctx, c, u.Path)
	if err == nil && len(files) == 0 {
		err = fmt.Errorf("%s: no files there", raw)
	}
	return u, c, files, err
}

// openRemote opens the file a URL names or, for a directory, every file
// below it in lexical order.
func openRemote(ctx context.Context, raw string, r *remoteOptions) ([]loader.Source, error) {
	u, c, files, err := listRemote(ctx, raw, r)
	if err != nil {
		return nil, err
	}
	srcs := make([]loader.Source, 0, len(files))
	for _, rf := range files {
		f, err := c.OpenInfo(rf.name, rf.info)
		if err != nil {
			return nil, err
		}
		srcs = append(srcs, remoteSource{File: f, url: rdmafs.URL{Addr: u.Addr, Path: rf.name}.String()})
	}
	return srcs, nil
}

// remoteFile is a regular file found on a server, with what the listing
// said of it.
type remoteFile struct {
	name string
	info rdmafs.FileInfo
}

// remoteFiles lists the regular files at or below name, in lexical order.
func remoteFiles(ctx context.Context, c *rdmafs.Client, name string) ([]remoteFile, error) {
	name = strings.Trim(name, "/")
	if name != "" {
		fi, err := c.Stat(ctx, name)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			return []remoteFile{{name, fi}}, nil
		}
	}
	entries, err := c.List(ctx, name)
	if err != nil {
		return nil, err
	}
	var out []remoteFile
	for _, e := range entries {
		child := path.Join(name, e.Name())
		switch {
		case e.IsDir():
			sub, err := remoteFiles(ctx, c, child)
			if err != nil {
				return nil, err
			}
			out = append(out, sub...)
		case e.Mode().IsRegular():
			out = append(out, remoteFile{child, e})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}
