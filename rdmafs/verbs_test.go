package rdmafs

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestVerbsUnavailableIsClear: on a machine without rdma-core or without
// an RDMA device, asking for verbs fails with ErrNoRDMA and an error that
// says why and names the TCP alternative (but no command-line flag).
func TestVerbsUnavailableIsClear(t *testing.T) {
	tr, err := TransportByName("verbs")
	if err == nil {
		t.Skipf("RDMA transport available here (%s): nothing to check", tr.Name())
	}
	t.Logf("verbs unavailable: %v", err)
	require.ErrorIs(t, err, ErrNoRDMA, "err = %v, want ErrNoRDMA naming the tcp transport and no flag", err)
	require.ErrorContains(t, err, "use the tcp transport", "err = %v, want ErrNoRDMA naming the tcp transport and no flag", err)
	require.NotContains(t, err.Error(), "--", "err = %v, want ErrNoRDMA naming the tcp transport and no flag", err)
	assert.False(t, !strings.Contains(err.Error(), "RDMA device") && !strings.Contains(err.Error(), "rdma-core"), "err = %v does not say whether rdma-core or a device is missing", err)
	_, err = TransportByName("carrier-pigeon")
	require.Error(t, err, "unknown transport accepted")
	tr, err = TransportByName("tcp")
	require.NoError(t, err, "tcp: %v", err)
	require.Equal(t, "tcp", tr.Name(), "tcp: %v", err)
}
