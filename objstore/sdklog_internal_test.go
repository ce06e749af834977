package objstore

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/aws/smithy-go/logging"
	"github.com/stretchr/testify/require"
)

// The SDK's own warnings go to the logger at debug level, never straight
// to stderr, where they reached users of the CLI before any error.
func TestSDKLinesGoToTheLoggerAtDebug(t *testing.T) {
	var buf bytes.Buffer
	l := sdkLogger{slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	l.Logf(logging.Warn, "falling back to IMDSv%d", 1)
	got := buf.String()
	require.Contains(t, got, "level=DEBUG", "logged %q", got)
	require.Contains(t, got, "aws sdk: falling back to IMDSv1", "logged %q", got)
	require.Contains(t, got, "class=WARN", "logged %q", got)
	buf.Reset()
	quiet := sdkLogger{slog.New(slog.NewTextHandler(&buf, nil))} // info and above
	quiet.Logf(logging.Warn, "falling back to IMDSv1")
	require.EqualValues(t, 0, buf.Len(), "a default logger printed %q", buf.String())
}
