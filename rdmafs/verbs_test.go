package rdmafs

import (
	"errors"
	"strings"
	"testing"
)

// TestVerbsUnavailableIsClear: without the rdma build tag, or on a machine
// without an RDMA device, asking for verbs fails with ErrNoRDMA and an error
// that names the TCP alternative.
func TestVerbsUnavailableIsClear(t *testing.T) {
	tr, err := TransportByName("verbs")
	if err == nil {
		t.Skipf("RDMA transport available here (%s): nothing to check", tr.Name())
	}
	t.Logf("verbs unavailable: %v", err)
	if !errors.Is(err, ErrNoRDMA) || !strings.Contains(err.Error(), "--transport tcp") {
		t.Fatalf("err = %v, want ErrNoRDMA naming --transport tcp", err)
	}
	if _, err := TransportByName("carrier-pigeon"); err == nil {
		t.Fatal("unknown transport accepted")
	}
	if tr, err := TransportByName("tcp"); err != nil || tr.Name() != "tcp" {
		t.Fatalf("tcp: %v", err)
	}
}
