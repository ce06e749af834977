package rdmafs

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"sync/atomic"
	"testing"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// toxiProxy is a toxiproxy proxy run in-process (the library, not the
// toxiproxy-server binary) between an rdmafs client and server. Toxics are
// added and removed while connections are open, as toxiproxy's HTTP API
// would, and apply to existing and new connections alike.
type toxiProxy struct {
	t *testing.T
	p *toxiproxy.Proxy
}

// newToxiProxy listens on 127.0.0.1:0 and forwards to upstream; it is
// stopped, closing every connection it carries, at cleanup.
func newToxiProxy(t *testing.T, upstream string) *toxiProxy {
	t.Helper()
	// Some toxics log through zerolog's global logger, at trace level on
	// interruptions that are normal here; keep only warnings and errors.
	zerolog.SetGlobalLevel(zerolog.WarnLevel)
	api := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	p := toxiproxy.NewProxy(api, "rdmafs", "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		t.Fatalf("starting toxiproxy in front of %s: %v", upstream, err)
	}
	t.Cleanup(p.Stop)
	return &toxiProxy{t: t, p: p}
}

// addr is where clients dial to go through the proxy.
func (tp *toxiProxy) addr() string { return tp.p.Listen }

// add installs toxic name of type typ on stream ("downstream": server to
// client, "upstream": client to server) with toxicity 1.
func (tp *toxiProxy) add(name, typ, stream string, attrs map[string]any) {
	tp.t.Helper()
	b, err := json.Marshal(map[string]any{"name": name, "type": typ, "stream": stream, "toxicity": 1.0, "attributes": attrs})
	if err != nil {
		tp.t.Fatal(err)
	}
	if _, err := tp.p.Toxics.AddToxicJson(bytes.NewReader(b)); err != nil {
		tp.t.Fatalf("adding toxic %s (%s %s %v): %v", name, typ, stream, attrs, err)
	}
}

// remove takes toxic name away; connections it held up carry on.
func (tp *toxiProxy) remove(name string) {
	tp.t.Helper()
	if err := tp.p.Toxics.RemoveToxic(context.Background(), name); err != nil {
		tp.t.Fatalf("removing toxic %s: %v", name, err)
	}
}

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
