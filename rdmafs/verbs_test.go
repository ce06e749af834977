package rdmafs

import (
	"errors"
	"strings"
	"testing"
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
	if !errors.Is(err, ErrNoRDMA) || !strings.Contains(err.Error(), "use the tcp transport") ||
		strings.Contains(err.Error(), "--") {
		t.Fatalf("err = %v, want ErrNoRDMA naming the tcp transport and no flag", err)
	}
	if !strings.Contains(err.Error(), "RDMA device") && !strings.Contains(err.Error(), "rdma-core") {
		t.Errorf("err = %v does not say whether rdma-core or a device is missing", err)
	}
	if _, err := TransportByName("carrier-pigeon"); err == nil {
		t.Fatal("unknown transport accepted")
	}
	if tr, err := TransportByName("tcp"); err != nil || tr.Name() != "tcp" {
		t.Fatalf("tcp: %v", err)
	}
}
