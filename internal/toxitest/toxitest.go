// Package toxitest runs a toxiproxy proxy in-process (the library, not the
// toxiproxy-server binary) between a test's client and server, so tests
// add latency, bandwidth caps, stalls and resets to a real TCP path.
package toxitest

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// Proxy forwards a loopback port to an upstream address through toxics
// that can be added and removed while connections are open.
type Proxy struct {
	t *testing.T
	p *toxiproxy.Proxy
}

// New listens on 127.0.0.1:0 and forwards to upstream; it is stopped,
// closing every connection it carries, at the test's cleanup.
func New(t *testing.T, upstream string) *Proxy {
	t.Helper()
	// Some toxics log through zerolog's global logger, at trace level on
	// interruptions that are normal here; keep only warnings and errors.
	zerolog.SetGlobalLevel(zerolog.WarnLevel)
	api := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	p := toxiproxy.NewProxy(api, "toxitest", "127.0.0.1:0", upstream)
	require.NoError(t, p.Start(), "starting toxiproxy in front of %s", upstream)
	t.Cleanup(p.Stop)
	return &Proxy{t: t, p: p}
}

// Addr is where clients dial to go through the proxy.
func (tp *Proxy) Addr() string { return tp.p.Listen }

// Add installs toxic name of type typ on stream ("downstream": server to
// client, "upstream": client to server) with toxicity 1.
func (tp *Proxy) Add(name, typ, stream string, attrs map[string]any) {
	tp.t.Helper()
	b, err := json.Marshal(map[string]any{"name": name, "type": typ, "stream": stream, "toxicity": 1.0, "attributes": attrs})
	require.NoError(tp.t, err)
	_, err = tp.p.Toxics.AddToxicJson(bytes.NewReader(b))
	require.NoError(tp.t, err, "adding toxic %s (%s %s %v)", name, typ, stream, attrs)
}

// Remove takes toxic name away; connections it held up carry on.
func (tp *Proxy) Remove(name string) {
	tp.t.Helper()
	require.NoError(tp.t, tp.p.Toxics.RemoveToxic(context.Background(), name), "removing toxic %s", name)
}
