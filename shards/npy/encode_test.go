package npy

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestEncodeRoundTrip(t *testing.T) {
	descrs := []string{"|b1", "?", "|i1", "<i2", ">i4", "<i8", "|u1", ">u2", "<u4", "<u8", "<f2", "<f4", ">f8", "<f16", "<c8", ">c16", "<c32", "=f4"}
	shapes := [][]int64{{}, {0}, {5}, {2, 3}, {1, 2, 3, 4}}
	for _, descr := range descrs {
		d, err := ParseDescr(descr)
		if err != nil {
			t.Fatal(err)
		}
		for _, shape := range shapes {
			for _, version := range [][2]byte{{}, {1, 0}, {2, 0}, {3, 0}} {
				for _, fortran := range []bool{false, true} {
					n := d.ItemSize
					for _, s := range shape {
						n *= s
					}
					data := make([]byte, n)
					for i := range data {
						data[i] = byte(i*13 + len(descr))
					}
					var buf bytes.Buffer
					a := Array{Descr: descr, FortranOrder: fortran, Shape: shape, Data: data, Version: version}
					if err := Encode(&buf, a); err != nil {
						t.Fatalf("%+v: %v", a, err)
					}
					h, err := parseBytes(buf.Bytes())
					if err != nil {
						t.Fatalf("%s %v v%v: %v", descr, shape, version, err)
					}
					wantVersion := version
					if version == [2]byte{} {
						wantVersion = [2]byte{1, 0}
					}
					if h.Version != wantVersion || h.Descr != descr || h.Dtype.String() != d.String() || h.FortranOrder != fortran || !equalShape(h.Shape, shape) {
						t.Errorf("wrote %s %v %v v%v, read %+v", descr, shape, fortran, version, h)
					}
					if h.DataOffset%64 != 0 || !bytes.Equal(buf.Bytes()[h.DataOffset:], data) {
						t.Errorf("%s %v: data at %d not aligned or differs", descr, shape, h.DataOffset)
					}
				}
			}
		}
	}
}

func TestEncodeRejects(t *testing.T) {
	tests := []struct {
		name string
		a    Array
		want error
	}{
		{"object", Array{Descr: "|O", Shape: []int64{1}, Data: make([]byte, 8)}, ErrObjectDtype},
		{"unsupported", Array{Descr: "<f3", Shape: []int64{1}, Data: make([]byte, 3)}, ErrUnsupportedDtype},
		{"record", Array{Descr: "i4,f8", Shape: []int64{1}, Data: make([]byte, 12)}, ErrUnsupportedDtype},
		{"quote in descr", Array{Descr: "<f4'", Shape: []int64{1}, Data: make([]byte, 4)}, ErrUnsupportedDtype},
		{"negative", Array{Descr: "<f4", Shape: []int64{-1}}, ErrInvalidShape},
		{"overflow", Array{Descr: "|u1", Shape: []int64{1 << 32, 1 << 32}}, ErrShapeOverflow},
		{"short data", Array{Descr: "<f4", Shape: []int64{2}, Data: make([]byte, 7)}, ErrDataLength},
		{"version", Array{Descr: "<f4", Shape: []int64{}, Data: make([]byte, 4), Version: [2]byte{2, 1}}, ErrVersion},
		{"more dimensions than numpy has", Array{Descr: "|u1", Shape: make([]int64, 33)}, ErrInvalidShape},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := Encode(&buf, tt.a)
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			if buf.Len() != 0 {
				t.Errorf("wrote %d bytes before failing", buf.Len())
			}
		})
	}
}

func TestEncodeHeaderText(t *testing.T) {
	var buf bytes.Buffer
	if err := Encode(&buf, Array{Descr: "<f4", Shape: []int64{3, 4}, Data: make([]byte, 48)}); err != nil {
		t.Fatal(err)
	}
	// Magic, version 1.0, u16 length, the dict with 20 spaces of room for
	// the growth axis "3", padding to 128 bytes, newline.
	dictText := "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }" + strings.Repeat(" ", 20)
	want := Magic + "\x01\x00\x76\x00" + dictText + strings.Repeat(" ", 128-10-len(dictText)-1) + "\n"
	if got := buf.String()[:128]; got != want {
		t.Errorf("header\n%q\nwant\n%q", got, want)
	}
}
