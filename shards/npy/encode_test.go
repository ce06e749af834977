package npy

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEncodeRoundTrip(t *testing.T) {
	descrs := []string{"|b1", "?", "|i1", "<i2", ">i4", "<i8", "|u1", ">u2", "<u4", "<u8", "<f2", "<f4", ">f8", "<f16", "<c8", ">c16", "<c32", "=f4"}
	shapes := [][]int64{{}, {0}, {5}, {2, 3}, {1, 2, 3, 4}}
	for _, descr := range descrs {
		d, err := ParseDescr(descr)
		require.NoError(t, err)
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
					require.NoError(t, Encode(&buf, a), "%+v", a)
					h, err := parseBytes(buf.Bytes())
					require.NoError(t, err, "%s %v v%v", descr, shape, version)
					wantVersion := version
					if version == [2]byte{} {
						wantVersion = [2]byte{1, 0}
					}
					if assert.Equal(t, wantVersion, h.Version, "wrote %s %v %v v%v, read %+v", descr, shape, fortran, version, h) {
						if assert.Equal(t, descr, h.Descr, "wrote %s %v %v v%v, read %+v", descr, shape, fortran, version, h) {
							if assert.Equal(t, d.String(), h.Dtype.String(), "wrote %s %v %v v%v, read %+v", descr, shape, fortran, version, h) {
								if assert.Equal(t, fortran, h.FortranOrder, "wrote %s %v %v v%v, read %+v", descr, shape, fortran, version, h) {
									assert.True(t, equalShape(h.Shape, shape), "wrote %s %v %v v%v, read %+v", descr, shape, fortran, version, h)
								}
							}
						}
					}
					if assert.EqualValues(t, 0, h.DataOffset%64, "%s %v: data at %d not aligned or differs", descr, shape, h.DataOffset) {
						assert.Equal(t, data, buf.Bytes()[h.DataOffset:], "%s %v: data at %d not aligned or differs", descr, shape, h.DataOffset)
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
			require.ErrorIs(t, err, tt.want, "got %v, want %v", err, tt.want)
			assert.Equal(t, 0, buf.Len(), "wrote %d bytes before failing", buf.Len())
		})
	}
}

func TestEncodeHeaderText(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, Encode(&buf, Array{Descr: "<f4", Shape: []int64{3, 4}, Data: make([]byte, 48)}))
	// Magic, version 1.0, u16 length, the dict with 20 spaces of room for
	// the growth axis "3", padding to 128 bytes, newline.
	dictText := "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }" + strings.Repeat(" ", 20)
	want := Magic + "\x01\x00\x76\x00" + dictText + strings.Repeat(" ", 128-10-len(dictText)-1) + "\n"
	got := buf.String()[:128]
	assert.Equal(t, want, got, "header\n%q\nwant\n%q", got, want)
}
