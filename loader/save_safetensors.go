package loader

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/bits"
	"sort"
	"strconv"
	"unicode/utf8"
)

// SaveTensor is one tensor for SaveSafetensors: its bytes (little-endian,
// packed as the dtype requires) in host memory (a HostSource) or device
// memory (a DeviceReader).
type SaveTensor struct {
	Name  string
	Dtype string // a safetensors dtype name: "F32", "BF16", "F8_E4M3", ...
	Shape []int64
	Data  SaveSource
}

// SaveSafetensors writes tensors as a safetensors file at path, with
// SaveFile's atomic discipline. The header is the u64 little-endian length
// followed by JSON ("__metadata__" first when metadata is not nil, then
// each tensor's dtype, shape and data_offsets), padded with spaces to a
// multiple of 8 bytes; the data region holds the tensors contiguously in
// the order given, so a checkpoint that lives in one device allocation is
// written in one pass. It fails before creating anything when a tensor is
// invalid: unknown dtype, a size that does not match dtype × shape, a
// duplicate or reserved name.
//
// The loader knows no file formats beyond this writer; the safetensors
// parser and validator live in shards/safetensors, whose tests check files
// written here.
func SaveSafetensors(ctx context.Context, path string, tensors []SaveTensor, metadata map[string]string, opts SaveOptions) (*SaveResult, error) {
	header, err := safetensorsHeader(tensors, metadata)
	if err != nil {
		return nil, fmt.Errorf("save %s: %w", path, err)
	}
	parts := make([]SaveSource, 0, len(tensors)+1)
	parts = append(parts, hostMemory(header))
	for _, t := range tensors {
		parts = append(parts, t.Data)
	}
	return SaveFile(ctx, path, newRegions(parts), opts)
}

// dtypeBits is the element size of each dtype of the safetensors
// specification (sub-byte dtypes are packed); shards/safetensors.DtypeBits
// is the reference its tests compare against.
func dtypeBits(dtype string) (int64, bool) {
	switch dtype {
	case "F4":
		return 4, true
	case "F6_E2M3", "F6_E3M2":
		return 6, true
	case "BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "F8_E8M0", "F8_E4M3FNUZ", "F8_E5M2FNUZ":
		return 8, true
	case "I16", "U16", "F16", "BF16":
		return 16, true
	case "I32", "U32", "F32":
		return 32, true
	case "C64", "F64", "I64", "U64":
		return 64, true
	}
	return 0, false
}

// maxSafetensorsHeader is the reference implementation's header limit.
const maxSafetensorsHeader = 100_000_000

func safetensorsHeader(tensors []SaveTensor, metadata map[string]string) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("{")
	if metadata != nil {
		keys := make([]string, 0, len(metadata))
		for k, v := range metadata {
			if !utf8.ValidString(k) || !utf8.ValidString(v) {
				return nil, fmt.Errorf("metadata key %q or its value is not valid UTF-8", k)
			}
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteString(`"__metadata__":{`)
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSON(&b, k)
			b.WriteByte(':')
			writeJSON(&b, metadata[k])
		}
		b.WriteByte('}')
	}
	seen := make(map[string]bool, len(tensors))
	var off int64
	for i, t := range tensors {
		if t.Name == "__metadata__" || t.Name == "" || !utf8.ValidString(t.Name) || seen[t.Name] {
			return nil, fmt.Errorf("tensor %d: name %q is empty, reserved, not UTF-8 or given twice", i, t.Name)
		}
		seen[t.Name] = true
		if t.Data == nil {
			return nil, fmt.Errorf("tensor %q: no data", t.Name)
		}
		want, err := tensorSize(t.Dtype, t.Shape)
		if err != nil {
			return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
		}
		if got := t.Data.Size(); got != want {
			return nil, fmt.Errorf("tensor %q: %d data bytes, %s%v needs %d", t.Name, got, t.Dtype, t.Shape, want)
		}
		if metadata != nil || i > 0 {
			b.WriteByte(',')
		}
		writeJSON(&b, t.Name)
		b.WriteString(`:{"dtype":`)
		writeJSON(&b, t.Dtype)
		b.WriteString(`,"shape":[`)
		for j, d := range t.Shape {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.FormatInt(d, 10))
		}
		fmt.Fprintf(&b, `],"data_offsets":[%d,%d]}`, off, off+want)
		off += want
	}
	b.WriteByte('}')
	for b.Len()%8 != 0 {
		b.WriteByte(' ')
	}
	if b.Len() > maxSafetensorsHeader {
		return nil, fmt.Errorf("the header would be %d bytes, over the limit of %d", b.Len(), maxSafetensorsHeader)
	}
	out := make([]byte, 8, 8+b.Len())
	binary.LittleEndian.PutUint64(out, uint64(b.Len()))
	return append(out, b.Bytes()...), nil
}

// tensorSize is the packed byte size of dtype × shape, with overflow checks.
func tensorSize(dtype string, shape []int64) (int64, error) {
	nbits, ok := dtypeBits(dtype)
	if !ok {
		return 0, fmt.Errorf("unknown dtype %q", dtype)
	}
	n := uint64(1)
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("negative dimension in shape %v", shape)
		}
		hi, lo := bits.Mul64(n, uint64(d))
		if hi != 0 || lo > 1<<62 {
			return 0, fmt.Errorf("shape %v overflows", shape)
		}
		n = lo
	}
	hi, total := bits.Mul64(n, uint64(nbits))
	if hi != 0 || total > 1<<62 {
		return 0, fmt.Errorf("shape %v of %s overflows", shape, dtype)
	}
	if total%8 != 0 {
		return 0, fmt.Errorf("%s%v is %d bits, not whole bytes", dtype, shape, total)
	}
	return int64(total / 8), nil
}

// writeJSON writes s as a JSON string without HTML escaping, as the
// reference serializer does.
func writeJSON(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)       // a string into a bytes.Buffer cannot fail
	b.Truncate(b.Len() - 1) // Encode appends a newline
}

// regions is a SaveSource made of parts laid end to end; it is read
// through host buffers (a DeviceReader), each part copied in place or
// read back from its device.
type regions struct {
	parts  []SaveSource
	starts []int64
	size   int64
}

func newRegions(parts []SaveSource) *regions {
	r := &regions{parts: parts, starts: make([]int64, len(parts))}
	for i, p := range parts {
		r.starts[i] = r.size
		r.size += p.Size()
	}
	return r
}

func (r *regions) Size() int64 { return r.size }

// ReadBack copies bytes [off, off+len(p)) of the concatenation into p.
func (r *regions) ReadBack(ctx context.Context, off int64, p []byte) error {
	i := sort.Search(len(r.parts), func(i int) bool { return r.starts[i]+r.parts[i].Size() > off })
	for len(p) > 0 {
		if i >= len(r.parts) {
			return fmt.Errorf("bytes [%d, %d) past the end of %d", off, off+int64(len(p)), r.size)
		}
		part, in := r.parts[i], off-r.starts[i]
		n := min(int64(len(p)), part.Size()-in)
		switch s := part.(type) {
		case HostSource:
			copy(p[:n], s.Bytes()[in:in+n])
		case DeviceReader:
			if err := s.ReadBack(ctx, in, p[:n]); err != nil {
				return fmt.Errorf("part %d: %w", i, err)
			}
		default:
			return fmt.Errorf("part %d is neither host memory nor a DeviceReader", i)
		}
		p, off, i = p[n:], off+n, i+1
	}
	return nil
}
