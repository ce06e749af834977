package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Exit codes, as documented in the README.
const (
	exitOK          = 0
	exitError       = 1
	exitUsage       = 2
	exitInterrupted = 130
)

// usageError marks an error in how the command was called.
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
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
	var u usageError
	if errors.As(err, &u) || isCobraUsage(err) {
		fmt.Fprintln(stderr, "Run 'gdsload --help' for usage.")
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
