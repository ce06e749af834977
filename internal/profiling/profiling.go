// Package profiling owns the run-wide profiles the CLI writes on request:
// a CPU profile for go tool pprof and an execution trace for go tool
// trace, started before a command and stopped after it.
package profiling

import (
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
	"runtime/trace"
)

// Start begins a CPU profile into the file cpuPath and an execution trace
// into tracePath; an empty path skips that one. On success, stop ends
// both and closes their files; it must be called once. On failure
// nothing is left running, and the error names what failed
// ("cpu profile" or "trace") and why.
func Start(cpuPath, tracePath string) (stop func() error, err error) {
	var cpuFile, traceFile *os.File
	stop = func() error {
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
	if cpuPath != "" {
		f, err := os.Create(cpuPath)
		if err != nil {
			return nil, fmt.Errorf("cpu profile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, fmt.Errorf("cpu profile: %w", err)
		}
		cpuFile = f
	}
	if tracePath != "" {
		f, err := os.Create(tracePath)
		if err == nil {
			if err = trace.Start(f); err != nil {
				f.Close()
			}
		}
		if err != nil {
			_ = stop() // the CPU profile, if it started
			return nil, fmt.Errorf("trace: %w", err)
		}
		traceFile = f
	}
	return stop, nil
}
