package main

import (
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"
)

// addVerbosityFlags adds --quiet/-q, --verbose/-v and --log-level to every
// command, as rclone, restic and kubectl have them. They set what goes to
// stderr only: stdout (a command's result, --json) never changes.
func addVerbosityFlags(root *cobra.Command) {
	f := root.PersistentFlags()
	f.BoolP("quiet", "q", false, "no progress bars or summaries on stderr, only warnings and errors (stdout, --json included, is unchanged)")
	f.BoolP("verbose", "v", false, "also print the library's reasons and diagnostics on stderr (--log-level debug)")
	f.String("log-level", "info", "what goes to stderr: debug, info (progress and summaries), warn or error")
	pre := root.PersistentPreRunE
	root.PersistentPreRunE = func(cmd *cobra.Command, a []string) error {
		if _, err := logLevel(cmd); err != nil || pre == nil {
			return err
		}
		return pre(cmd, a)
	}
}

// logLevel is the stderr level the flags ask for: info unless given.
func logLevel(cmd *cobra.Command) (l slog.Level, err error) {
	f := cmd.Root().PersistentFlags()
	quiet, _ := f.GetBool("quiet")
	verbose, _ := f.GetBool("verbose")
	switch named := f.Changed("log-level"); {
	case quiet && verbose:
		return 0, usagef("--quiet and --verbose exclude each other")
	case named && (quiet || verbose):
		return 0, usagef("give --log-level, or --quiet or --verbose, not both")
	case quiet:
		return slog.LevelWarn, nil
	case verbose:
		return slog.LevelDebug, nil
	case named:
		s, _ := f.GetString("log-level")
		if err := l.UnmarshalText([]byte(s)); err != nil || strings.ContainsAny(s, "+-") {
			return 0, usagef("--log-level %q: want debug, info, warn or error", s)
		}
	}
	return l, nil
}

// level is logLevel once PersistentPreRunE checked the flags.
func level(cmd *cobra.Command) slog.Level {
	l, _ := logLevel(cmd)
	return l
}

// infoOut is where progress bars and human summaries go: stderr, or
// nowhere under --quiet.
func infoOut(cmd *cobra.Command) io.Writer {
	if level(cmd) > slog.LevelInfo {
		return io.Discard
	}
	return cmd.ErrOrStderr()
}

// logger writes diagnostics to stderr at the level asked for, without
// timestamps (serve, a daemon, keeps them).
func logger(cmd *cobra.Command) *slog.Logger {
	return slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{
		Level: level(cmd),
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{}
			}
			return a
		},
	}))
}
