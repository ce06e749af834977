//go:build !rdma || !linux

package rdmafs

import (
	"strings"
	"testing"
)

func TestVerbsStubMessage(t *testing.T) {
	_, err := Verbs()
	want := "built without RDMA support (rebuild with -tags rdma); use --transport tcp"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want it to contain %q", err, want)
	}
}
