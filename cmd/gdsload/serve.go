package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/gdsload/gdsload/internal/humanize"
	"github.com/gdsload/gdsload/rdmafs"
)

// serveOptions holds the flags of `gdsload serve`.
type serveOptions struct {
	root          string
	listen        string
	tokenFile     string
	insecure      bool
	transport     string
	metricsListen string
	credits       int
	poolBuffers   int
	bufferSize    string
	tcpCongestion string
	logLevel      slog.Level
}

func newServeCmd() *cobra.Command {
	o := &serveOptions{}
	cmd := &cobra.Command{
		Use:   "serve --root DIR --listen ADDR",
		Short: "Export a directory read-only to gdsload clients (rdmafs)",
		Long: `Export one directory read-only over the rdmafs protocol.

Clients authenticate with a shared token (HMAC-SHA256 challenge-response);
traffic is NOT encrypted: run it on a trusted network or inside a tunnel.
The token file must be mode 600; make one with
  (umask 077; head -c 32 /dev/urandom | base64 > token)
and give the same file to clients (--token-file, or GDSLOAD_TOKEN). The server
also reads GDSLOAD_TOKEN when --token-file is not given. Without a token the
server refuses to start unless --insecure-no-token is given.

Failed logins are logged with the peer's address (at most 10 lines a minute;
the next line says how many were held back) and counted in the
rdmafs_auth_failures_total metric.

Once ready, serve prints exactly one line to stdout, "listening on HOST:PORT"
(so --listen 127.0.0.1:0 works), and logs to stderr. On SIGINT/SIGTERM it
stops accepting, lets in-flight reads finish and exits 0.`,
		Args:         noArgs("--root"),
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.logLevel = level(cmd)
			return runServe(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.root, "root", "", "directory to export (required)")
	f.StringVar(&o.listen, "listen", fmt.Sprintf(":%d", rdmafs.DefaultPort), "address to listen on (HOST:PORT; port 0 picks a free one)")
	f.StringVar(&o.tokenFile, "token-file", "", "file holding the shared secret (mode 600; trailing newline ignored; default: $GDSLOAD_TOKEN)")
	f.BoolVar(&o.insecure, "insecure-no-token", false, "run without authentication: anyone who reaches the port can read the export")
	f.StringVar(&o.transport, "transport", "tcp", "transport: tcp, or verbs (RDMA: needs rdma-core and an RDMA device)")
	f.StringVar(&o.metricsListen, "metrics-listen", "", "serve Prometheus metrics at http://ADDR/metrics (off when empty)")
	f.IntVar(&o.credits, "credits", 16, "outstanding requests allowed per client connection")
	f.IntVar(&o.poolBuffers, "pool-buffers", 64, "number of server data buffers (bounds memory with --buffer-size)")
	f.StringVar(&o.bufferSize, "buffer-size", "1MiB", "size of each server data buffer (4KiB to 1GiB; e.g. 1MiB); reads are served in pieces of this size")
	f.StringVar(&o.tcpCongestion, "tcp-congestion", rdmafs.DefaultTCPCongestion, "TCP congestion control of client connections (a kernel name such as cubic or bbr; "+rdmafs.SystemTCPCongestion+": the kernel's default)")
	_ = cmd.MarkFlagRequired("root")
	return cmd
}

func runServe(ctx context.Context, stdout, stderr io.Writer, o *serveOptions) error {
	bufferSize, err := humanize.ParseBytes(o.bufferSize)
	if err != nil {
		return usageError{fmt.Errorf("--buffer-size: %w", err)}
	}
	if err := errors.Join(intFlagIn("--credits", o.credits, 1, 1024), intFlagIn("--pool-buffers", o.poolBuffers, 1, 1<<20),
		intFlagIn("--buffer-size", int(min(bufferSize, 1<<31)), 4096, 1<<30)); err != nil {
		return err
	}
	if err := rdmafs.CheckTCPCongestion(o.tcpCongestion); err != nil {
		return usageError{fmt.Errorf("--tcp-congestion: %w", err)}
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: o.logLevel}))
	opts := []rdmafs.ServerOption{rdmafs.WithCredits(o.credits), rdmafs.WithBufferPool(o.poolBuffers, int(bufferSize)),
		rdmafs.WithTCPCongestion(o.tcpCongestion), rdmafs.WithServerLogger(log)}
	tok, err := rdmafs.ClientToken(o.tokenFile)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	switch {
	case tok != nil && o.insecure && o.tokenFile != "":
		return errors.New("serve: --token-file and --insecure-no-token exclude each other")
	case tok != nil && o.insecure:
		return errors.New("serve: GDSLOAD_TOKEN is set and --insecure-no-token given: unset one of them")
	case tok != nil:
		opts = append(opts, rdmafs.WithServerToken(tok))
	case !o.insecure:
		return errors.New("serve: no token: pass --token-file FILE (a random secret, mode 600, e.g. `openssl rand -hex 32 > FILE; chmod 600 FILE`), or --insecure-no-token on a trusted network")
	default:
		opts = append(opts, rdmafs.WithInsecureNoToken())
		log.Warn("serving WITHOUT authentication (--insecure-no-token): anyone who can reach the port can read the export")
	}
	tr, err := rdmafs.TransportByName(o.transport)
	if err != nil {
		return fmt.Errorf("serve: --transport %s: %w", o.transport, err)
	}
	srv, err := rdmafs.NewServer(o.root, opts...)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	ln, err := tr.Listen(ctx, o.listen)
	if err != nil {
		return fmt.Errorf("serve: listen on %s: %w", o.listen, err)
	}
	if o.metricsListen != "" {
		_, stop, err := srv.ServeMetrics(o.metricsListen)
		if err != nil {
			ln.Close()
			return fmt.Errorf("serve: metrics listener %s: %w", o.metricsListen, err)
		}
		defer stop()
	}
	fmt.Fprintf(stdout, "listening on %s\n", ln.Addr())
	log.Info("rdmafs serving", "root", o.root, "addr", ln.Addr().String(), "transport", tr.Name(), "auth", !o.insecure)
	return srv.Serve(ctx, ln)
}
