package main

import (
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/spf13/cobra"
)

// addProfileFlag adds a hidden --cpuprofile FILE to every command: a CPU
// profile of the whole run, for `go tool pprof`, when a benchmark needs
// explaining.
func addProfileFlag(root *cobra.Command) {
	var path string
	var f *os.File
	root.PersistentFlags().StringVar(&path, "cpuprofile", "", "write a CPU profile of the run to this file")
	_ = root.PersistentFlags().MarkHidden("cpuprofile")
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		if path == "" {
			return nil
		}
		var err error
		if f, err = os.Create(path); err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		return pprof.StartCPUProfile(f)
	}
	root.PersistentPostRunE = func(*cobra.Command, []string) error {
		if f == nil {
			return nil
		}
		pprof.StopCPUProfile()
		return f.Close()
	}
}
