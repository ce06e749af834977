package npy

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Array is an array to write as a .npy file.
type Array struct {
	Descr        string  // a descr ParseDescr accepts, not a record, e.g. "<f4"
	FortranOrder bool    // column-major Data
	Shape        []int64 // empty for a 0-d array
	Data         []byte  // exactly elements × item size bytes, in the descr's byte order
	// Version is the format version to write; the zero value picks 1.0, or
	// 2.0 when the header does not fit a 1.0 header, as numpy does.
	Version [2]byte
}

// Encode writes a as a .npy file that numpy.load reads, byte for byte what
// numpy 1.24's numpy.save writes for the same array: the header dict with
// sorted keys, room for the growth axis, and padding with spaces and a final
// newline so the data starts at a multiple of 64 bytes. It fails before
// writing anything if the descr is unsupported, the shape negative, the
// data length wrong or the header too long for the requested version.
func Encode(w io.Writer, a Array) error {
	fail := func(kind error, detail string) error { return &Error{Offset: -1, Kind: kind, Detail: detail} }
	d, err := ParseDescr(a.Descr)
	if err != nil {
		return err
	}
	if d.Fields != nil {
		return fail(ErrUnsupportedDtype, fmt.Sprintf("descr %q is a record: numpy writes those as a list of fields, which Encode does not", a.Descr))
	}
	if len(a.Shape) > maxDims {
		return fail(ErrInvalidShape, fmt.Sprintf("%d dimensions, numpy allows %d", len(a.Shape), maxDims))
	}
	count := int64(1)
	dims := make([]string, len(a.Shape))
	for i, n := range a.Shape {
		if n < 0 {
			return fail(ErrInvalidShape, fmt.Sprintf("shape %v", a.Shape))
		}
		if n != 0 && count > math.MaxInt64/n {
			return fail(ErrShapeOverflow, fmt.Sprintf("shape %v", a.Shape))
		}
		count *= n
		dims[i] = strconv.FormatInt(n, 10)
	}
	if d.ItemSize > 0 && count > math.MaxInt64/d.ItemSize || int64(len(a.Data)) != count*d.ItemSize {
		return fail(ErrDataLength, fmt.Sprintf("%d data bytes for %s%v", len(a.Data), a.Descr, a.Shape))
	}
	shape := "(" + strings.Join(dims, ", ") + ")"
	if len(dims) == 1 {
		shape = "(" + dims[0] + ",)"
	}
	order := "False"
	if a.FortranOrder {
		order = "True"
	}
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': %s, 'shape': %s, }", a.Descr, order, shape)
	if len(dims) > 0 {
		// numpy leaves room to rewrite the growth axis's length in place.
		growth := dims[0]
		if a.FortranOrder {
			growth = dims[len(dims)-1]
		}
		dict += strings.Repeat(" ", growthAxisMaxDigits-len(growth))
	}

	version := a.Version
	if version == [2]byte{} {
		version = [2]byte{1, 0}
		if paddedLen(len(dict), 2) > math.MaxUint16 {
			version = [2]byte{2, 0}
		}
	}
	var lenSize int
	switch version {
	case [2]byte{1, 0}:
		lenSize = 2
	case [2]byte{2, 0}, [2]byte{3, 0}:
		lenSize = 4
	default:
		return fail(ErrVersion, fmt.Sprintf("version %d.%d; supported are 1.0, 2.0, 3.0", version[0], version[1]))
	}
	pre := len(Magic) + 2 + lenSize
	hlen := paddedLen(len(dict), lenSize)
	if hlen > MaxHeaderSize {
		return fail(ErrHeaderTooLarge, fmt.Sprintf("header of %d bytes exceeds the cap %d", hlen, MaxHeaderSize))
	}
	if lenSize == 2 && hlen > math.MaxUint16 {
		return fail(ErrHeaderTooLarge, fmt.Sprintf("header of %d bytes does not fit version 1.0", hlen))
	}
	out := make([]byte, 0, pre+hlen)
	out = append(out, Magic...)
	out = append(out, version[0], version[1])
	if lenSize == 2 {
		out = binary.LittleEndian.AppendUint16(out, uint16(hlen))
	} else {
		out = binary.LittleEndian.AppendUint32(out, uint32(hlen))
	}
	out = append(out, dict...)
	for len(out) < pre+hlen-1 {
		out = append(out, ' ')
	}
	out = append(out, '\n')
	if _, err := w.Write(out); err != nil {
		return err
	}
	_, err = w.Write(a.Data)
	return err
}

// growthAxisMaxDigits is numpy's room for the length of the growth axis.
const growthAxisMaxDigits = 21

// paddedLen returns the header length for a dict of n bytes: the dict, 1 to
// 64 spaces and a newline, so that magic, version, length field and header
// end on a 64-byte boundary (numpy pads a full 64 when already aligned).
func paddedLen(n, lenSize int) int {
	pre := len(Magic) + 2 + lenSize
	hlen := n + 1
	return hlen + 64 - (pre+hlen)%64
}
