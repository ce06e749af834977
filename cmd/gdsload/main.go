// Command gdsload moves checkpoint and dataset shards from local storage or
// a remote rdmafs server into host or GPU memory, stages checkpoints, serves
// files, and measures what a storage path is worth against POSIX reads.
//
// Only this package knows about flags, terminals and exit codes; the work is
// done by the loader, cufile, rdmafs and shards packages.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := execute(ctx, newRootCmd())
	interrupted := ctx.Err() != nil
	stop()
	os.Exit(exitCode(err, interrupted, os.Stderr))
}
