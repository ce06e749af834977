package safetensors

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rawFile builds a file from a literal header and a data region of dataLen
// bytes, without any validation, so tests can write invalid files.
func rawFile(header string, dataLen int) []byte {
	b := make([]byte, 8, 8+len(header)+dataLen)
	binary.LittleEndian.PutUint64(b, uint64(len(header)))
	b = append(b, header...)
	return append(b, make([]byte, dataLen)...)
}

func parseBytes(b []byte) (*Header, error) {
	return ParseHeader(bytes.NewReader(b), int64(len(b)))
}

func TestParseHeaderRejects(t *testing.T) {
	const f32 = `"dtype":"F32","shape":[2],"data_offsets":[0,8]`
	tooLarge := make([]byte, 16)
	binary.LittleEndian.PutUint64(tooLarge, MaxHeaderSize+1)
	longer := make([]byte, 16)
	binary.LittleEndian.PutUint64(longer, 9)
	tests := []struct {
		name string
		file []byte
		want error
	}{
		{"file shorter than length prefix", []byte{1, 0, 0}, ErrHeaderTruncated},
		{"header length past end of file", longer, ErrHeaderTruncated},
		{"header length over 100 MB", tooLarge, ErrHeaderTooLarge},
		{"invalid utf-8", rawFile("{\"a\xff\":{}}", 0), ErrInvalidUTF8},
		{"empty header", rawFile("", 0), ErrInvalidJSON},
		{"syntax error", rawFile(`{"a":}`, 0), ErrInvalidJSON},
		{"unterminated object", rawFile(`{"a":{`+f32+`}`, 8), ErrInvalidJSON},
		{"trailing value", rawFile(`{} {}`, 0), ErrInvalidJSON},
		{"trailing garbage", rawFile(`{}x`, 0), ErrInvalidJSON},
		{"lone high surrogate", rawFile(`{"a\ud800":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}}`, 0), ErrInvalidJSON},
		{"lone low surrogate", rawFile(`{"__metadata__":{"k":"\udc00"}}`, 0), ErrInvalidJSON},
		{"high surrogate then non-low", rawFile(`{"__metadata__":{"k":"\ud800\u0041"}}`, 0), ErrInvalidJSON},
		{"header is an array", rawFile(`[]`, 0), ErrHeaderNotObject},
		{"header is a string", rawFile(`"x"`, 0), ErrHeaderNotObject},
		{"metadata not object", rawFile(`{"__metadata__":[]}`, 0), ErrMetadata},
		{"metadata number value", rawFile(`{"__metadata__":{"a":1}}`, 0), ErrMetadata},
		{"metadata object value", rawFile(`{"__metadata__":{"a":{}}}`, 0), ErrMetadata},
		{"metadata duplicate key", rawFile(`{"__metadata__":{"a":"1","a":"2"}}`, 0), ErrMetadata},
		{"duplicate metadata object", rawFile(`{"__metadata__":{},"__metadata__":{}}`, 0), ErrDuplicateTensor},
		{"duplicate tensor", rawFile(`{"a":{`+f32+`},"a":{`+f32+`}}`, 8), ErrDuplicateTensor},
		{"duplicate tensor via escape", rawFile(`{"a":{`+f32+`},"\u0061":{`+f32+`}}`, 8), ErrDuplicateTensor},
		{"tensor not object", rawFile(`{"a":[1]}`, 0), ErrInvalidTensor},
		{"dtype not string", rawFile(`{"a":{"dtype":7,"shape":[],"data_offsets":[0,0]}}`, 0), ErrInvalidTensor},
		{"missing dtype", rawFile(`{"a":{"shape":[2],"data_offsets":[0,8]}}`, 8), ErrMissingField},
		{"missing shape", rawFile(`{"a":{"dtype":"F32","data_offsets":[0,8]}}`, 8), ErrMissingField},
		{"missing data_offsets", rawFile(`{"a":{"dtype":"F32","shape":[2]}}`, 8), ErrMissingField},
		{"unknown field", rawFile(`{"a":{`+f32+`,"stride":[1]}}`, 8), ErrUnknownField},
		{"duplicate field", rawFile(`{"a":{`+f32+`,"dtype":"F32"}}`, 8), ErrDuplicateField},
		{"unknown dtype", rawFile(`{"a":{"dtype":"F128","shape":[1],"data_offsets":[0,16]}}`, 16), ErrUnknownDtype},
		{"dtype wrong case", rawFile(`{"a":{"dtype":"f32","shape":[2],"data_offsets":[0,8]}}`, 8), ErrUnknownDtype},
		{"negative shape", rawFile(`{"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}`, 8), ErrInvalidShape},
		{"fractional shape", rawFile(`{"a":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}}`, 8), ErrInvalidShape},
		{"exponent shape", rawFile(`{"a":{"dtype":"F32","shape":[2e0],"data_offsets":[0,8]}}`, 8), ErrInvalidShape},
		{"string shape", rawFile(`{"a":{"dtype":"F32","shape":["2"],"data_offsets":[0,8]}}`, 8), ErrInvalidShape},
		{"shape not array", rawFile(`{"a":{"dtype":"F32","shape":2,"data_offsets":[0,8]}}`, 8), ErrInvalidShape},
		{"nested shape", rawFile(`{"a":{"dtype":"F32","shape":[[2]],"data_offsets":[0,8]}}`, 8), ErrInvalidShape},
		{"shape dim beyond u64", rawFile(`{"a":{"dtype":"U8","shape":[18446744073709551616],"data_offsets":[0,0]}}`, 0), ErrShapeOverflow},
		{"shape dim beyond i64", rawFile(`{"a":{"dtype":"U8","shape":[9223372036854775808],"data_offsets":[0,0]}}`, 0), ErrShapeOverflow},
		{"shape product overflow", rawFile(`{"a":{"dtype":"U8","shape":[4294967296,4294967296,0],"data_offsets":[0,0]}}`, 0), ErrShapeOverflow},
		{"size in bits overflow", rawFile(`{"a":{"dtype":"F64","shape":[2305843009213693952],"data_offsets":[0,0]}}`, 0), ErrShapeOverflow},
		{"offsets one value", rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[8]}}`, 8), ErrInvalidOffsets},
		{"offsets three values", rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8,8]}}`, 8), ErrInvalidOffsets},
		{"offsets negative", rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[-8,0]}}`, 8), ErrInvalidOffsets},
		{"offsets huge", rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,99999999999999999999]}}`, 8), ErrInvalidOffsets},
		{"offsets reversed", rawFile(`{"a":{"dtype":"U8","shape":[0],"data_offsets":[8,0]}}`, 8), ErrInvalidOffsets},
		{"F4 odd count", rawFile(`{"a":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}}`, 2), ErrSubByte},
		{"F6 partial byte", rawFile(`{"a":{"dtype":"F6_E2M3","shape":[2],"data_offsets":[0,2]}}`, 2), ErrSubByte},
		{"size too small", rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`, 4), ErrSizeMismatch},
		{"size too large", rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,12]}}`, 12), ErrSizeMismatch},
		{"first tensor not at 0", rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`, 12), ErrOffsetsGap},
		{"gap between tensors", rawFile(`{"a":{`+f32+`},"b":{"dtype":"F32","shape":[1],"data_offsets":[12,16]}}`, 16), ErrOffsetsGap},
		{"overlapping tensors", rawFile(`{"a":{`+f32+`},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`, 12), ErrOffsetsOverlap},
		{"same range twice", rawFile(`{"a":{`+f32+`},"b":{`+f32+`}}`, 8), ErrOffsetsOverlap},
		{"trailing data bytes", rawFile(`{"a":{`+f32+`}}`, 9), ErrDataRegionLength},
		{"data region short", append(rawFile(`{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,12]}}`, 0), make([]byte, 8)...), ErrDataRegionLength},
		{"no tensors but data", rawFile(`{}`, 1), ErrDataRegionLength},
	}
	sentinels := []error{ErrHeaderTruncated, ErrHeaderTooLarge, ErrInvalidUTF8, ErrInvalidJSON, ErrHeaderNotObject,
		ErrMetadata, ErrDuplicateTensor, ErrInvalidTensor, ErrMissingField, ErrUnknownField, ErrDuplicateField,
		ErrUnknownDtype, ErrInvalidShape, ErrShapeOverflow, ErrInvalidOffsets, ErrSubByte, ErrSizeMismatch,
		ErrOffsetsGap, ErrOffsetsOverlap, ErrDataRegionLength, ErrRead}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := parseBytes(tt.file)
			require.Error(t, err, "accepted: %+v", h)
			require.ErrorIs(t, err, tt.want, "error %q is not %q", err, tt.want)
			for _, s := range sentinels {
				require.False(t, s != tt.want && errors.Is(err, s), "error %q also matches %q", err, s)
			}
			var e *Error
			require.ErrorAs(t, err, &e, "error %T is not *Error", err)
		})
	}
}

func TestParseHeaderAccepts(t *testing.T) {
	tests := []struct {
		name   string
		file   []byte
		names  []string // expected tensor order
		meta   map[string]string
		shapes [][]int64
	}{
		{"empty object", rawFile(`{}`, 0), nil, nil, nil},
		{"whitespace around and padding", rawFile(" \n\t{}\r\n   ", 0), nil, nil, nil},
		{"null metadata", rawFile(`{"__metadata__":null}`, 0), nil, nil, nil},
		{"metadata only", rawFile(`{"__metadata__":{"format":"pt","":""}}`, 0), nil, map[string]string{"format": "pt", "": ""}, nil},
		{"scalar", rawFile(`{"s":{"dtype":"F64","shape":[],"data_offsets":[0,8]}}`, 8), []string{"s"}, nil, [][]int64{{}}},
		{"zero-size tensors share an offset",
			rawFile(`{"z":{"data_offsets":[4,4],"shape":[0,5],"dtype":"I32"},"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"y":{"dtype":"F4","shape":[0],"data_offsets":[4,4]},"b":{"dtype":"F4","shape":[2,3],"data_offsets":[4,7]}}`, 7),
			[]string{"a", "y", "z", "b"}, nil, [][]int64{{4}, {0}, {0, 5}, {2, 3}}},
		{"F6 four elements", rawFile(`{"a":{"dtype":"F6_E3M2","shape":[4],"data_offsets":[0,3]}}`, 3), []string{"a"}, nil, [][]int64{{4}}},
		{"order by offset not by key", rawFile(`{"b":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, 2), []string{"b", "a"}, nil, [][]int64{{1}, {1}}},
		{"surrogate pair and escaped backslash", rawFile(`{"\ud83d\ude00\\ud800":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}}`, 0), []string{"\U0001F600\\ud800"}, nil, [][]int64{{0}}},
		{"unicode names", rawFile(`{"é\u4e2d":{"dtype":"BOOL","shape":[1],"data_offsets":[0,1]}}`, 1), []string{"é中"}, nil, [][]int64{{1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := parseBytes(tt.file)
			require.NoError(t, err)
			require.Len(t, h.Tensors, len(tt.names), "got %d tensors, want %d", len(h.Tensors), len(tt.names))
			for i, ti := range h.Tensors {
				assert.Equal(t, tt.names[i], ti.Name, "tensor %d = %q %v, want %q %v", i, ti.Name, ti.Shape, tt.names[i], tt.shapes[i])
				assert.True(t, equalShape(ti.Shape, tt.shapes[i]), "tensor %d = %q %v, want %q %v", i, ti.Name, ti.Shape, tt.names[i], tt.shapes[i])
			}
			assert.Len(t, h.Metadata, len(tt.meta), "metadata %v, want %v", h.Metadata, tt.meta)
			for k, v := range tt.meta {
				assert.Equal(t, v, h.Metadata[k], "metadata[%q] = %q, want %q", k, h.Metadata[k], v)
			}
			assert.Equal(t, int64(len(tt.file)), h.FileSize(), "FileSize %d, want %d", h.FileSize(), len(tt.file))
		})
	}
}

func equalShape(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestErrorNamesFileTensorAndOffset(t *testing.T) {
	file := rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"w":{"dtype":"F32","shape":[2],"data_offsets":[8,12]}}`, 12)
	path := writeTemp(t, "bad.safetensors", file)
	_, err := Open(path)
	var e *Error
	require.ErrorAs(t, err, &e, "got %v, want *Error of ErrSizeMismatch", err)
	require.ErrorIs(t, err, ErrSizeMismatch, "got %v, want *Error of ErrSizeMismatch", err)
	// The "w" entry is located where the "a" entry ends.
	wantOff := int64(8 + strings.Index(string(file[8:]), `,"w"`))
	assert.Equal(t, path, e.Path, "got path %q tensor %q offset %d, want %q %q %d", e.Path, e.Tensor, e.Offset, path, "w", wantOff)
	assert.Equal(t, "w", e.Tensor, "got path %q tensor %q offset %d, want %q %q %d", e.Path, e.Tensor, e.Offset, path, "w", wantOff)
	assert.Equal(t, wantOff, e.Offset, "got path %q tensor %q offset %d, want %q %q %d", e.Path, e.Tensor, e.Offset, path, "w", wantOff)
	for _, part := range []string{path, `"w"`, "data_offsets [8, 12] span 4 bytes", "needs 8", "re-export"} {
		assert.ErrorContains(t, err, part, "message %q lacks %q", err, part)
	}
}

// strictReader fails the test if anything past limit is read.
type strictReader struct {
	t     *testing.T
	r     io.ReaderAt
	limit int64
}

func (s strictReader) ReadAt(p []byte, off int64) (int, error) {
	assert.LessOrEqual(s.t, off+int64(len(p)), s.limit, "read [%d, %d) past the header end %d", off, off+int64(len(p)), s.limit)
	return s.r.ReadAt(p, off)
}

func TestParseHeaderReadsOnlyHeader(t *testing.T) {
	var buf bytes.Buffer
	data := make([]byte, 1<<20)
	require.NoError(t, Encode(&buf, []TensorData{{Name: "big", Dtype: "U8", Shape: []int64{1 << 20}, Data: data}}, nil))
	n := int64(binary.LittleEndian.Uint64(buf.Bytes()))
	h, err := ParseHeader(strictReader{t, bytes.NewReader(buf.Bytes()), 8 + n}, int64(buf.Len()))
	require.NoError(t, err)
	assert.Equal(t, 8+n, h.DataOffset, "DataOffset %d DataLen %d", h.DataOffset, h.DataLen)
	assert.EqualValues(t, 1<<20, h.DataLen, "DataOffset %d DataLen %d", h.DataOffset, h.DataLen)
	// A header length over the cap is refused before reading (or allocating) it.
	binary.LittleEndian.PutUint64(buf.Bytes(), MaxHeaderSize+1)
	_, err = ParseHeader(strictReader{t, bytes.NewReader(buf.Bytes()), 8}, 1<<40)
	require.ErrorIs(t, err, ErrHeaderTooLarge, "got %v, want ErrHeaderTooLarge", err)
}

// errReaderAt fails every read.
type errReaderAt struct{ err error }

func (e errReaderAt) ReadAt([]byte, int64) (int, error) { return 0, e.err }

func TestParseHeaderReadErrors(t *testing.T) {
	ioErr := errors.New("device gone")
	_, err := ParseHeader(errReaderAt{ioErr}, 100)
	assert.ErrorIs(t, err, ErrRead, "got %v, want ErrRead wrapping the cause", err)
	assert.ErrorIs(t, err, ioErr, "got %v, want ErrRead wrapping the cause", err)
	// A size larger than what the reader holds is a truncated file.
	file := rawFile(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, 1)
	_, err = ParseHeader(bytes.NewReader(file[:20]), int64(len(file)))
	assert.ErrorIs(t, err, ErrHeaderTruncated, "got %v, want ErrHeaderTruncated", err)
}
