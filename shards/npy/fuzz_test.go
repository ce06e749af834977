package npy

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

func FuzzParseHeader(f *testing.F) {
	for _, a := range []Array{
		{Descr: "<f4", Shape: []int64{2, 3}, Data: make([]byte, 24)},
		{Descr: "|b1", Shape: []int64{}, Data: []byte{1}, Version: [2]byte{2, 0}},
		{Descr: ">c16", FortranOrder: true, Shape: []int64{1, 0}, Version: [2]byte{3, 0}},
	} {
		var buf bytes.Buffer
		require.NoError(f, Encode(&buf, a))
		f.Add(buf.Bytes())
	}
	f.Add(rawNPY(1, dict("[('a', '<i4'), ('b', [('c', '<f8', (2, 3))])]", "False", "(2,)"), 0))
	f.Add(rawNPY(3, "{\"descr\":\"<u2\",\"shape\":(1,),\"fortran_order\":True}", 2))
	f.Add(rawNPY(1, "{'descr': '<M8[s/1000]', 'fortran_order': False, 'shape': (2L, -1), } # py2", 32))
	f.Add(rawNPY(2, "{u'descr': 'i4,(2,)f8', 'fortran_order': False, 'shape': (1,), }", 20))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := ParseHeader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			var e *Error
			require.ErrorAs(t, err, &e, "error %v is not an *Error with a Kind", err)
			require.Error(t, e.Kind, "error %v is not an *Error with a Kind", err)
			return
		}
		require.Equal(t, int64(len(data)), h.DataOffset+h.DataLen+h.Trailing, "DataOffset %d DataLen %d Trailing %d for %d bytes", h.DataOffset, h.DataLen, h.Trailing, len(data))
		require.GreaterOrEqual(t, h.Trailing, int64(0), "DataOffset %d DataLen %d Trailing %d for %d bytes", h.DataOffset, h.DataLen, h.Trailing, len(data))
		require.Equal(t, h.Elements()*h.Dtype.ItemSize, h.DataLen, "DataOffset %d DataLen %d Trailing %d for %d bytes", h.DataOffset, h.DataLen, h.Trailing, len(data))
		// Cross-check with the writer: an accepted array of a plain dtype
		// (Encode writes no records) re-encodes in its dtype's canonical
		// spelling and parses back to the same header fields and data.
		if h.Dtype.Fields != nil {
			return
		}
		var buf bytes.Buffer
		a := Array{Descr: h.Dtype.String(), FortranOrder: h.FortranOrder, Shape: h.Shape, Data: data[h.DataOffset : h.DataOffset+h.DataLen], Version: h.Version}
		require.NoError(t, Encode(&buf, a), "accepted header does not re-encode")
		h2, err := parseBytes(buf.Bytes())
		require.NoError(t, err, "re-encoded file rejected")
		require.Equal(t, h.Dtype.String(), h2.Dtype.String(), "re-encoded header %+v differs from %+v", h2, h)
		require.Equal(t, h.FortranOrder, h2.FortranOrder, "re-encoded header %+v differs from %+v", h2, h)
		require.True(t, equalShape(h2.Shape, h.Shape), "re-encoded header %+v differs from %+v", h2, h)
		require.Equal(t, h.Version, h2.Version, "re-encoded header %+v differs from %+v", h2, h)
	})
}
