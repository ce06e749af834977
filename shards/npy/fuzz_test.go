package npy

import (
	"bytes"
	"errors"
	"testing"
)

func FuzzParseHeader(f *testing.F) {
	for _, a := range []Array{
		{Descr: "<f4", Shape: []int64{2, 3}, Data: make([]byte, 24)},
		{Descr: "|b1", Shape: []int64{}, Data: []byte{1}, Version: [2]byte{2, 0}},
		{Descr: ">c16", FortranOrder: true, Shape: []int64{1, 0}, Version: [2]byte{3, 0}},
	} {
		var buf bytes.Buffer
		if err := Encode(&buf, a); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	f.Add(rawNPY(1, dict("[('a', '<i4'), ('b', [('c', '<f8', (2, 3))])]", "False", "(2,)"), 0))
	f.Add(rawNPY(3, "{\"descr\":\"<u2\",\"shape\":(1,),\"fortran_order\":True}", 2))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := ParseHeader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Kind == nil {
				t.Fatalf("error %v is not an *Error with a Kind", err)
			}
			return
		}
		if h.DataOffset+h.DataLen != int64(len(data)) || h.DataLen != h.Elements()*h.Dtype.ItemSize {
			t.Fatalf("DataOffset %d DataLen %d for %d bytes", h.DataOffset, h.DataLen, len(data))
		}
		// Cross-check with the writer: the accepted array re-encodes and
		// parses back to the same header fields and data.
		var buf bytes.Buffer
		a := Array{Descr: h.Descr, FortranOrder: h.FortranOrder, Shape: h.Shape, Data: data[h.DataOffset:], Version: h.Version}
		if err := Encode(&buf, a); err != nil {
			if errors.Is(err, ErrHeaderTooLarge) && len(h.Shape) > 10000 {
				return // the canonical text of that many dims is longer than the input's
			}
			t.Fatalf("accepted header does not re-encode: %v", err)
		}
		h2, err := parseBytes(buf.Bytes())
		if err != nil {
			t.Fatalf("re-encoded file rejected: %v", err)
		}
		if h2.Descr != h.Descr || h2.Dtype != h.Dtype || h2.FortranOrder != h.FortranOrder || !equalShape(h2.Shape, h.Shape) || h2.Version != h.Version {
			t.Fatalf("re-encoded header %+v differs from %+v", h2, h)
		}
	})
}
