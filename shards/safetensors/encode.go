package safetensors

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"unicode/utf8"
)

// TensorData is one tensor to write: its bytes, little-endian and packed as
// the dtype requires.
type TensorData struct {
	Name  string
	Dtype string
	Shape []int64
	Data  []byte
}

// Encode writes a valid safetensors file holding tensors and, if metadata is
// not nil, a "__metadata__" object, laid out as NewWriter describes. It
// fails before writing anything if a tensor is invalid (unknown dtype,
// len(Data) not matching dtype and shape, duplicate or reserved name,
// invalid UTF-8).
func Encode(w io.Writer, tensors []TensorData, metadata map[string]string) error {
	specs := make([]TensorSpec, len(tensors))
	data := make(map[string][]byte, len(tensors))
	for i, t := range tensors {
		size, err := tensorBytes(t.Dtype, t.Shape)
		if err != nil {
			err.Tensor, err.Offset = t.Name, -1
			return err
		}
		if int64(len(t.Data)) != size {
			return &Error{Tensor: t.Name, Offset: -1, Kind: ErrSizeMismatch,
				Detail: fmt.Sprintf("%d data bytes, %s%v needs %d", len(t.Data), t.Dtype, t.Shape, size)}
		}
		specs[i] = TensorSpec{Name: t.Name, Dtype: t.Dtype, Shape: t.Shape}
		data[t.Name] = t.Data
	}
	sw, err := NewWriter(w, specs, metadata)
	if err != nil {
		return err
	}
	for _, t := range sw.Layout() {
		if _, err := sw.Write(data[t.Name]); err != nil {
			return err
		}
	}
	return sw.Close()
}

// TensorSpec describes a tensor whose bytes a Writer will stream.
type TensorSpec struct {
	Name  string
	Dtype string
	Shape []int64
}

// Writer streams a safetensors file too large to hold in memory, such as a
// checkpoint saved from device memory: NewWriter writes the header, the
// caller then writes each tensor's bytes in Layout order, and Close checks
// that the data region is complete.
type Writer struct {
	w       io.Writer
	layout  []TensorInfo
	dataLen int64
	written int64
}

// NewWriter validates tensors, chooses their layout and writes the header to
// w. Like the reference serializer it lays the data out in its dtype order,
// descending (dtypeRanks: by size, so every tensor is aligned to its
// element size, and among dtypes of one size in the reference's order),
// then by name; writes the header as compact JSON with metadata (if not nil) first and
// keys sorted, and pads it with spaces to a multiple of 8 bytes. Output is
// deterministic. It writes nothing if a tensor is invalid.
func NewWriter(w io.Writer, tensors []TensorSpec, metadata map[string]string) (*Writer, error) {
	layout, head, err := EncodeHeader(tensors, metadata)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(head); err != nil {
		return nil, err
	}
	var dataLen int64
	if len(layout) > 0 {
		dataLen = layout[len(layout)-1].End
	}
	return &Writer{w: w, layout: layout, dataLen: dataLen}, nil
}

// Layout returns the tensors in file order with their data offsets; the
// caller must write their bytes in this order. The caller must not modify
// the returned slice.
func (sw *Writer) Layout() []TensorInfo { return sw.layout }

// Write writes data-region bytes. It fails, writing nothing, if p would run
// past the end of the data region.
func (sw *Writer) Write(p []byte) (int, error) {
	if int64(len(p)) > sw.dataLen-sw.written {
		return 0, &Error{Offset: -1, Kind: ErrDataRegionLength,
			Detail: fmt.Sprintf("writing %d bytes at data offset %d passes the end %d", len(p), sw.written, sw.dataLen)}
	}
	n, err := sw.w.Write(p)
	sw.written += int64(n)
	return n, err
}

// Close reports whether the whole data region was written. It does not
// close the underlying writer.
func (sw *Writer) Close() error {
	if sw.written != sw.dataLen {
		return &Error{Offset: -1, Kind: ErrDataRegionLength,
			Detail: fmt.Sprintf("%d of %d data bytes written", sw.written, sw.dataLen)}
	}
	return nil
}

// EncodeHeader validates tensors and returns their layout (file order, as
// NewWriter lays them out) and the bytes that precede the data region: the
// u64 little-endian header length and the padded JSON header. Callers that
// write the data region themselves (from device memory, say) write these
// bytes first, then each tensor's bytes in layout order.
func EncodeHeader(tensors []TensorSpec, metadata map[string]string) ([]TensorInfo, []byte, error) {
	layout, header, err := encodeHeader(tensors, metadata)
	if err != nil {
		return nil, nil, err
	}
	out := make([]byte, 8, 8+len(header))
	binary.LittleEndian.PutUint64(out, uint64(len(header)))
	return layout, append(out, header...), nil
}

// encodeHeader validates tensors and returns their layout with the padded
// JSON header.
func encodeHeader(tensors []TensorSpec, metadata map[string]string) ([]TensorInfo, []byte, error) {
	layout := make([]TensorInfo, len(tensors))
	rank := make(map[string]int, len(tensors))
	for i, t := range tensors {
		fail := func(kind error, detail string) error {
			return &Error{Tensor: t.Name, Offset: -1, Kind: kind, Detail: detail}
		}
		if _, dup := rank[t.Name]; dup {
			return nil, nil, fail(ErrDuplicateTensor, "the name is given twice")
		}
		if t.Name == metadataKey || !utf8.ValidString(t.Name) {
			return nil, nil, fail(ErrInvalidTensor, "the name is reserved or not valid UTF-8")
		}
		size, e := tensorBytes(t.Dtype, t.Shape)
		if e != nil {
			e.Tensor, e.Offset = t.Name, -1
			return nil, nil, e
		}
		rank[t.Name] = dtypeRanks[t.Dtype]
		layout[i] = TensorInfo{Name: t.Name, Dtype: t.Dtype, Shape: slices.Clone(t.Shape), End: size}
	}
	for k, v := range metadata {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return nil, nil, &Error{Offset: -1, Kind: ErrMetadata, Detail: fmt.Sprintf("key %q or its value is not valid UTF-8", k)}
		}
	}
	slices.SortFunc(layout, func(a, b TensorInfo) int {
		return cmp.Or(cmp.Compare(rank[b.Name], rank[a.Name]), cmp.Compare(a.Name, b.Name))
	})

	var b bytes.Buffer
	b.WriteByte('{')
	if metadata != nil {
		writeJSONString(&b, metadataKey)
		b.WriteString(":{")
		for i, k := range slices.Sorted(maps.Keys(metadata)) {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSONString(&b, k)
			b.WriteByte(':')
			writeJSONString(&b, metadata[k])
		}
		b.WriteByte('}')
	}
	var off int64
	for i := range layout {
		t := &layout[i]
		t.Begin, t.End = off, off+t.End
		off = t.End
		if i > 0 || metadata != nil {
			b.WriteByte(',')
		}
		writeJSONString(&b, t.Name)
		b.WriteString(`:{"dtype":`)
		writeJSONString(&b, t.Dtype)
		b.WriteString(`,"shape":[`)
		for j, d := range t.Shape {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.FormatInt(d, 10))
		}
		fmt.Fprintf(&b, `],"data_offsets":[%d,%d]}`, t.Begin, t.End)
	}
	b.WriteByte('}')
	for b.Len()%8 != 0 {
		b.WriteByte(' ')
	}
	if b.Len() > MaxHeaderSize {
		return nil, nil, &Error{Offset: -1, Kind: ErrHeaderTooLarge, Detail: fmt.Sprintf("the header would be %d bytes", b.Len())}
	}
	return layout, b.Bytes(), nil
}

// writeJSONString writes s as a JSON string without HTML escaping, as
// serde_json does.
func writeJSONString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)       // cannot fail for a string into a bytes.Buffer
	b.Truncate(b.Len() - 1) // Encode appends a newline
}
