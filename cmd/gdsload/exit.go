package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gdsload/gdsload/cufile"
	"github.com/gdsload/gdsload/internal/humanize"
	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/rdmafs"
	"github.com/gdsload/gdsload/shards/webdataset"
	"github.com/gdsload/gdsload/stage"
)

// Exit codes, as documented in docs/CLI.md.
const (
	exitOK          = 0
	exitError       = 1
	exitUsage       = 2
	exitPartial     = 3 // some files staged, others not: listed
	exitInterrupted = 130
)

// usageError marks an error in how the command was called.
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// noArgs refuses arguments to a command that takes none (cobra's NoArgs
// calls one an unknown command); flag, if set, is where one belongs.
func noArgs(flag string) cobra.PositionalArgs {
	return args(func(cmd *cobra.Command, a []string) error {
		switch {
		case len(a) == 0:
			return nil
		case flag != "":
			return fmt.Errorf("%s takes no arguments: did you mean %s %s?", cmd.Name(), flag, a[0])
		}
		return fmt.Errorf("%s takes no arguments, got %q", cmd.Name(), a[0])
	})
}

// commandError carries the path of the command whose run failed ("gdsload
// load"), so a usage error can point at that command's help.
type commandError struct {
	path string
	err  error
}

func (c commandError) Error() string { return c.err.Error() }
func (c commandError) Unwrap() error { return c.err }

// execute runs root and tags an error with the command it came from.
func execute(ctx context.Context, root *cobra.Command) error {
	c, err := root.ExecuteContextC(ctx)
	if err != nil && c != nil {
		err = commandError{path: c.CommandPath(), err: err}
	}
	return err
}

// exitCode prints err (if any) and maps it to the process exit code.
func exitCode(err error, interrupted bool, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	if interrupted || errors.Is(err, context.Canceled) {
		fmt.Fprintln(stderr, "gdsload: interrupted")
		return exitInterrupted
	}
	fmt.Fprintf(stderr, "gdsload: %v\n", err)
	var partial *stage.PartialError
	if errors.As(err, &partial) && !partial.All() {
		return exitPartial // some staged, some not; nothing staged is a plain error
	}
	var u usageError
	if errors.As(err, &u) || isCobraUsage(err) {
		help := "gdsload"
		var c commandError
		if errors.As(err, &c) {
			help = c.path
		}
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", help)
		return exitUsage
	}
	return exitError
}

// isCobraUsage recognises the errors cobra itself returns for unknown
// commands and wrong arguments, which carry no type of their own.
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "accepts ", "requires at least", "requires at most", "flag needs an argument", "invalid argument", "required flag"} {
		if strings.HasPrefix(msg, p) || strings.Contains(msg, " "+p) {
			return true
		}
	}
	return false
}

// flagHints say, per command, which flag changes the outcome of a library
// error: the library names no flags.
var flagHints = []struct {
	err      error
	commands []string // "" for every command
	hint     string
}{
	{loader.ErrDirectRefused, []string{""}, "use --direct auto or off on this file system"},
	{webdataset.ErrManifest, []string{"load"}, "fix it with 'gdsload manifest DIR', or skip the check with --verify=false"},
	{stage.ErrChunkSize, []string{""}, "raise --chunk-size"},
	{cufile.ErrUnavailable, []string{"load"}, "use --to host, or run 'gdsload doctor' to see what is missing"},
	{cufile.ErrUnavailable, []string{"stage"}, "stage into a directory instead, or run 'gdsload doctor' to see what is missing"},
	{rdmafs.ErrAuth, []string{""}, "check --token-file or GDSLOAD_TOKEN"},
}

// withHint adds the flag hint for err, if any, as command would print it.
func withHint(command string, err error) error {
	for _, h := range flagHints {
		if errors.Is(err, h.err) && (slices.Contains(h.commands, "") || slices.Contains(h.commands, command)) {
			return fmt.Errorf("%w; %s", err, h.hint)
		}
	}
	return err
}

// Upper bounds of the count flags that the library leaves open (the
// loader bounds --workers and --chunk-size). Beyond them a typo would
// exhaust memory or threads before any useful work, so they are usage
// errors instead.
const (
	maxPrefetch    = 4096
	maxRuns        = 10000
	maxRandomReads = 1 << 30 // bench --random-reads
)

// intFlagIn is a usage error unless lo <= v <= hi.
func intFlagIn(flag string, v, lo, hi int) error {
	if v < lo || v > hi {
		return usagef("%s %d: want %d to %d", flag, v, lo, hi)
	}
	return nil
}

// alignedSizeFlag parses the size flag's value s (--chunk-size, say): a
// positive multiple of 4 KiB (the direct-I/O alignment), at most
// loader.MaxChunkSize.
func alignedSizeFlag(flag, s string) (int64, error) {
	n, err := humanize.ParseBytes(s)
	if err != nil || n <= 0 || n > loader.MaxChunkSize {
		return 0, usagef("%s %q: want a size from 4 KiB to 1 GiB, such as 4MiB", flag, s)
	}
	if n%loader.DefaultAlignment != 0 {
		return 0, usagef("%s %q: want a multiple of 4 KiB (the direct-I/O alignment), such as %s", flag, s, humanize.Bytes((n+loader.DefaultAlignment-1)/loader.DefaultAlignment*loader.DefaultAlignment))
	}
	return n, nil
}
