package rdmafs

import (
	"context"
	"log/slog"
	"sync/atomic"
)

// retryCounter is a slog handler that counts the client's "rdmafs retrying"
// records, so a test can tell that a fault really hit its transfer.
type retryCounter struct{ n atomic.Int64 }

func (h *retryCounter) Enabled(context.Context, slog.Level) bool { return true }

func (h *retryCounter) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "rdmafs retrying" {
		h.n.Add(1)
	}
	return nil
}

func (h *retryCounter) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *retryCounter) WithGroup(string) slog.Handler      { return h }
