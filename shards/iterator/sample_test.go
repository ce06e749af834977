package iterator

import (
	"testing"

	"github.com/gdsload/gdsload/shards/webdataset"
)

func TestSampleBytes(t *testing.T) {
	s := &Sample{Fields: []webdataset.Field{{Ext: "txt", Data: []byte("abc")}, {Ext: "cls", Data: []byte("7")}, {Ext: "e"}}}
	if got := s.Bytes(); got != 4 {
		t.Fatalf("Bytes() = %d, want 4", got)
	}
	if got := (&Sample{}).Bytes(); got != 0 {
		t.Fatalf("Bytes() of no fields = %d", got)
	}
}
