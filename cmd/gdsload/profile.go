package main

import (
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
	"runtime/trace"

	"github.com/spf13/cobra"
)

// addProfileFlag adds a hidden --cpuprofile FILE to every command: a CPU
// profile of the whole run, for `go tool pprof`, when a benchmark needs
// explaining; and a hidden --trace FILE: an execution trace, for `go tool
// trace`, when the question is which goroutine waits for which (how far
// the decode workers of iterate run in parallel, say).
func addProfileFlag(root *cobra.Command) {
	var cpuPath, tracePath string
	var cpuFile, traceFile *os.File
	root.PersistentFlags().StringVar(&cpuPath, "cpuprofile", "", "write a CPU profile of the run to this file")
	root.PersistentFlags().StringVar(&tracePath, "trace", "", "write an execution trace of the run to this file")
	_ = root.PersistentFlags().MarkHidden("cpuprofile")
	_ = root.PersistentFlags().MarkHidden("trace")
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		if cpuPath != "" {
			var err error
			if cpuFile, err = os.Create(cpuPath); err != nil {
				return fmt.Errorf("--cpuprofile: %w", err)
			}
			if err := pprof.StartCPUProfile(cpuFile); err != nil {
				return fmt.Errorf("--cpuprofile: %w", err)
			}
		}
		if tracePath != "" {
			var err error
			if traceFile, err = os.Create(tracePath); err == nil {
				if err = trace.Start(traceFile); err != nil {
					traceFile.Close()
				}
			}
			if err != nil {
				if cpuFile != nil { // the command will not run: stop what started
					pprof.StopCPUProfile()
					cpuFile.Close()
				}
				return fmt.Errorf("--trace: %w", err)
			}
		}
		return nil
	}
	root.PersistentPostRunE = func(*cobra.Command, []string) error {
		var errs []error
		if cpuFile != nil {
			pprof.StopCPUProfile()
			errs = append(errs, cpuFile.Close())
		}
		if traceFile != nil {
			trace.Stop()
			errs = append(errs, traceFile.Close())
		}
		return errors.Join(errs...)
	}
}
