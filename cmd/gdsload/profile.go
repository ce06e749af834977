package main

import (
	"fmt"

	"github.com/gdsload/gdsload/internal/profiling"
	"github.com/spf13/cobra"
)

// addProfileFlag adds a hidden --cpuprofile FILE to every command: a CPU
// profile of the whole run, for `go tool pprof`, when a benchmark needs
// explaining; and a hidden --trace FILE: an execution trace, for `go tool
// trace`, when the question is which goroutine waits for which.
func addProfileFlag(root *cobra.Command) {
	var cpuPath, tracePath string
	stop := func() error { return nil }
	root.PersistentFlags().StringVar(&cpuPath, "cpuprofile", "", "write a CPU profile of the run to this file")
	root.PersistentFlags().StringVar(&tracePath, "trace", "", "write an execution trace of the run to this file")
	_ = root.PersistentFlags().MarkHidden("cpuprofile")
	_ = root.PersistentFlags().MarkHidden("trace")
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		s, err := profiling.Start(cpuPath, tracePath)
		if err != nil {
			return fmt.Errorf("--cpuprofile/--trace: %w", err)
		}
		stop = s
		return nil
	}
	root.PersistentPostRunE = func(*cobra.Command, []string) error { return stop() }
}
