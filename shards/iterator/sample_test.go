package iterator

import (
	"testing"

	"github.com/gdsload/gdsload/shards/webdataset"
	"github.com/stretchr/testify/require"
)

func TestSampleBytes(t *testing.T) {
	s := &Sample{Fields: []webdataset.Field{{Ext: "txt", Data: []byte("abc")}, {Ext: "cls", Data: []byte("7")}, {Ext: "e"}}}
	got := s.Bytes()
	require.EqualValues(t, 4, got, "Bytes() = %d, want 4", got)
	got = (&Sample{}).Bytes()
	require.Zero(t, got, "Bytes() of no fields = %d", got)
}
