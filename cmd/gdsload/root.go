package main

import (
	"github.com/spf13/cobra"
)

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "gdsload",
		Short: "Stream checkpoint and dataset shards from storage into GPU memory",
		Long: `gdsload moves checkpoint and dataset shards from local NVMe, or from a remote
rdmafs server, into GPU or host memory, and says which path it took and why:
gds (cuFile, GPUDirect Storage), bounce (pinned host buffers and async copies),
host, or rdma.

Exit codes: 0 ok, 1 error, 2 usage, 3 partial (stage: some files could not be
staged, the others were; the failures are listed), 130 interrupted.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	addProfileFlag(root)
	addVerbosityFlags(root)
	root.AddCommand(
		newLoadCmd(),
		newCacheCmd(), // cache.go
		newBenchCmd(),
		newVersionCmd(),
		newDevicesCmd(),
		newDoctorCmd(),
		newInspectCmd(),
		newIterateCmd(),
		newManifestCmd(),
		newServeCmd(),
		newStageCmd(),
	)
	for _, c := range root.Commands() {
		if run := c.RunE; run != nil {
			c.RunE = func(cmd *cobra.Command, a []string) error { return withHint(cmd.Name(), run(cmd, a)) }
		}
	}
	return root
}

// args wraps a cobra argument check so that its failure is a usage error.
func args(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := check(cmd, a); err != nil {
			return usageError{err}
		}
		return nil
	}
}
