package objstore

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/smithy-go/logging"
)

// The SDK's own warnings go to the logger at debug level, never straight
// to stderr, where they reached users of the CLI before any error.
func TestSDKLinesGoToTheLoggerAtDebug(t *testing.T) {
	var buf bytes.Buffer
	l := sdkLogger{slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	l.Logf(logging.Warn, "falling back to IMDSv%d", 1)
	got := buf.String()
	if !strings.Contains(got, "level=DEBUG") || !strings.Contains(got, "aws sdk: falling back to IMDSv1") || !strings.Contains(got, "class=WARN") {
		t.Fatalf("logged %q", got)
	}
	buf.Reset()
	quiet := sdkLogger{slog.New(slog.NewTextHandler(&buf, nil))} // info and above
	quiet.Logf(logging.Warn, "falling back to IMDSv1")
	if buf.Len() != 0 {
		t.Fatalf("a default logger printed %q", buf.String())
	}
}
