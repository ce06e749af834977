package npy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rawNPY builds a file from a literal header text (no padding added) and
// dataLen zero bytes, without validation, so tests can write invalid files.
func rawNPY(major byte, text string, dataLen int) []byte {
	b := []byte(Magic)
	b = append(b, major, 0)
	if major == 1 {
		b = binary.LittleEndian.AppendUint16(b, uint16(len(text)))
	} else {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(text)))
	}
	b = append(b, text...)
	return append(b, make([]byte, dataLen)...)
}

func parseBytes(b []byte) (*Header, error) {
	return ParseHeader(bytes.NewReader(b), int64(len(b)))
}

func dict(descr, order, shape string) string {
	return "{'descr': " + descr + ", 'fortran_order': " + order + ", 'shape': " + shape + ", }\n"
}

func TestParseHeaderRejects(t *testing.T) {
	ok := dict("'<f4'", "False", "(2,)")
	bigLen := []byte(Magic + "\x02\x00")
	bigLen = binary.LittleEndian.AppendUint32(bigLen, MaxHeaderSize+1)
	tests := []struct {
		name string
		file []byte
		want error
	}{
		{"empty file", nil, ErrNotNPY},
		{"wrong magic", rawNPY(1, ok, 8)[1:], ErrNotNPY},
		{"short magic", []byte(Magic[:5]), ErrNotNPY},
		{"magic and version only", []byte(Magic + "\x01\x00"), ErrHeaderTruncated},
		{"version 4.0", rawNPY(4, ok, 8), ErrVersion},
		{"version 1.1", append([]byte(Magic+"\x01\x01"), rawNPY(1, ok, 8)[8:]...), ErrVersion},
		{"v2 length cut short", []byte(Magic + "\x02\x00\x10\x00"), ErrHeaderTruncated},
		{"header length past end", rawNPY(1, ok, 0)[:20], ErrHeaderTruncated},
		{"header length over cap", append(bigLen, make([]byte, 64)...), ErrHeaderTooLarge},
		{"v3 invalid utf-8", rawNPY(3, "{'descr': '\xff<f4', 'fortran_order': False, 'shape': (2,), }", 8), ErrHeaderEncoding},
		{"empty header", rawNPY(1, "", 0), ErrHeaderSyntax},
		{"not a dict", rawNPY(1, "['descr']", 0), ErrHeaderSyntax},
		{"unterminated dict", rawNPY(1, "{'descr': '<f4', ", 0), ErrHeaderSyntax},
		{"unterminated string", rawNPY(1, "{'descr: '<f4'}", 0), ErrHeaderSyntax},
		{"escape in string", rawNPY(1, dict(`'<f\4'`, "False", "(2,)"), 8), ErrUnsupportedDtype},
		{"missing colon", rawNPY(1, "{'descr' '<f4'}", 0), ErrHeaderSyntax},
		{"missing comma", rawNPY(1, "{'descr': '<f4' 'shape': ()}", 0), ErrHeaderSyntax},
		{"int key", rawNPY(1, "{1: 2}", 0), ErrUnknownKey},
		{"text after dict", rawNPY(1, ok+"x", 8), ErrHeaderSyntax},
		{"lowercase bool", rawNPY(1, dict("'<f4'", "false", "(2,)"), 8), ErrHeaderSyntax},
		{"bool prefix of word", rawNPY(1, dict("'<f4'", "Falsey", "(2,)"), 8), ErrHeaderSyntax},
		{"leading zero int", rawNPY(1, dict("'<f4'", "False", "(02,)"), 8), ErrHeaderSyntax},
		{"long int suffix in v3", rawNPY(3, dict("'<f4'", "False", "(2L,)"), 8), ErrHeaderSyntax},
		{"None value", rawNPY(1, dict("'<f4'", "None", "(2,)"), 8), ErrFieldType},
		{"deep nesting", rawNPY(1, dict("'<f4'", "False", strings.Repeat("(", 250)+strings.Repeat(")", 250)), 8), ErrHeaderSyntax},
		{"missing descr", rawNPY(1, "{'fortran_order': False, 'shape': (2,)}", 8), ErrMissingKey},
		{"missing fortran_order", rawNPY(1, "{'descr': '<f4', 'shape': (2,)}", 8), ErrMissingKey},
		{"missing shape", rawNPY(1, "{'descr': '<f4', 'fortran_order': False}", 8), ErrMissingKey},
		{"unknown key", rawNPY(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'strides': (4,)}", 8), ErrUnknownKey},
		{"descr int", rawNPY(1, dict("4", "False", "(2,)"), 8), ErrFieldType},
		{"fortran_order int", rawNPY(1, dict("'<f4'", "0", "(2,)"), 8), ErrFieldType},
		{"shape list", rawNPY(1, dict("'<f4'", "False", "[2]"), 8), ErrFieldType},
		{"shape parenthesized int", rawNPY(1, dict("'<f4'", "False", "(2)"), 8), ErrFieldType},
		{"shape of strings", rawNPY(1, dict("'<f4'", "False", "('2',)"), 8), ErrFieldType},
		{"two dimensions to work out", rawNPY(1, dict("'<f4'", "False", "(-1, -1)"), 8), ErrInvalidShape},
		{"dimension beyond int64", rawNPY(1, dict("'|u1'", "False", "(9223372036854775808,)"), 0), ErrShapeOverflow},
		{"element count overflow", rawNPY(1, dict("'|u1'", "False", "(4294967296, 4294967296, 0)"), 0), ErrShapeOverflow},
		{"byte count overflow", rawNPY(1, dict("'<f8'", "False", "(2305843009213693952,)"), 0), ErrDataLength},
		{"object dtype", rawNPY(1, dict("'|O'", "False", "(2,)"), 16), ErrObjectDtype},
		{"odd float size", rawNPY(1, dict("'<f3'", "False", "(2,)"), 6), ErrUnsupportedDtype},
		{"data too short", rawNPY(1, ok, 7), ErrDataLength},
	}
	sentinels := []error{ErrNotNPY, ErrVersion, ErrHeaderTooLarge, ErrHeaderTruncated, ErrHeaderEncoding, ErrHeaderSyntax,
		ErrMissingKey, ErrUnknownKey, ErrFieldType, ErrInvalidShape, ErrShapeOverflow, ErrObjectDtype,
		ErrUnsupportedDtype, ErrDataLength, ErrRead}
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
		name    string
		file    []byte
		descr   string
		dtype   string
		fortran bool
		shape   []int64
	}{
		{"numpy style", rawNPY(1, dict("'<f4'", "False", "(3, 4)"), 48), "<f4", "<f4", false, []int64{3, 4}},
		{"0-d", rawNPY(1, dict("'<i8'", "False", "()"), 8), "<i8", "<i8", false, []int64{}},
		{"empty array", rawNPY(2, dict("'>u2'", "True", "(0, 5)"), 0), ">u2", ">u2", true, []int64{0, 5}},
		{"double quotes, no trailing comma, odd spacing",
			rawNPY(3, "\t{ \"shape\" :(5 ,) ,\"fortran_order\":True,\"descr\":\"|b1\"}\f\r\n", 5), "|b1", "|b1", true, []int64{5}},
		{"tuple trailing comma", rawNPY(1, dict("'<c16'", "False", "(1, 2,)"), 32), "<c16", "<c16", false, []int64{1, 2}},
		{"bool as ?", rawNPY(1, dict("'?'", "False", "(3,)"), 3), "?", "|b1", false, []int64{3}},
		{"v3 native byte order", rawNPY(3, dict("'=f2'", "False", "(1,)"), 2), "=f2", "<f2", false, []int64{1}},
		{"python 2 long ints", rawNPY(1, dict("'<f4'", "False", "(3L, 4L)"), 48), "<f4", "<f4", false, []int64{3, 4}},
		{"repeated key", rawNPY(1, "{'shape': (9,), 'descr': '<u1', 'fortran_order': False, 'shape': (2,)}", 2), "<u1", "|u1", false, []int64{2}},
		{"record", rawNPY(1, dict("[('a', '<i4'), ('b', '<f8', (2,))]", "False", "(2,)"), 40), "[('a', '<i4'), ('b', '<f8', (2,))]", "|V20", false, []int64{2}},
		{"text", rawNPY(1, dict("'<U3'", "False", "(2,)"), 24), "<U3", "<U3", false, []int64{2}},
		{"datetime", rawNPY(1, dict("'<M8[ns]'", "False", "(2,)"), 16), "<M8[ns]", "<M8[ns]", false, []int64{2}},
		{"worked out dimension", rawNPY(1, dict("'<f4'", "False", "(-1, 2)"), 16), "<f4", "<f4", false, []int64{2, 2}},
		{"trailing bytes", rawNPY(1, dict("'<f4'", "False", "(2,)"), 9), "<f4", "<f4", false, []int64{2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := parseBytes(tt.file)
			require.NoError(t, err)
			if assert.Equal(t, tt.descr, h.Descr, "got %q %+v %v %v, want %q %+v %v %v", h.Descr, h.Dtype, h.FortranOrder, h.Shape, tt.descr, tt.dtype, tt.fortran, tt.shape) {
				if assert.Equal(t, tt.dtype, h.Dtype.String(), "got %q %+v %v %v, want %q %+v %v %v", h.Descr, h.Dtype, h.FortranOrder, h.Shape, tt.descr, tt.dtype, tt.fortran, tt.shape) {
					if assert.Equal(t, tt.fortran, h.FortranOrder, "got %q %+v %v %v, want %q %+v %v %v", h.Descr, h.Dtype, h.FortranOrder, h.Shape, tt.descr, tt.dtype, tt.fortran, tt.shape) {
						assert.True(t, equalShape(h.Shape, tt.shape), "got %q %+v %v %v, want %q %+v %v %v", h.Descr, h.Dtype, h.FortranOrder, h.Shape, tt.descr, tt.dtype, tt.fortran, tt.shape)
					}
				}
			}
			if assert.Equal(t, int64(len(tt.file)), h.DataOffset+h.DataLen+h.Trailing, "DataOffset %d DataLen %d for %d bytes", h.DataOffset, h.DataLen, len(tt.file)) {
				assert.Equal(t, h.Elements()*h.Dtype.ItemSize, h.DataLen, "DataOffset %d DataLen %d for %d bytes", h.DataOffset, h.DataLen, len(tt.file))
			}
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

func TestParseDescr(t *testing.T) {
	good := map[string]string{
		"|b1": "|b1", "?": "|b1", "|?": "|b1", "|i1": "|i1", "<i2": "<i2", ">i4": ">i4", "=i8": "<i8", "|u1": "|u1", "<u8": "<u8",
		"<f2": "<f2", "<f4": "<f4", ">f8": ">f8", "<f16": "<f16", "<c8": "<c8", "<c16": "<c16", "<c32": "<c32", "f4": "<f4",
		"<e": "<f2", "|S5": "|S5", "<U1": "<U1", "|V8": "|V8", "<m8": "<m8", ">M8[25s]": ">M8[25s]", "<i+4": "<i4",
		"float32": "<f4", "int": "<i8", ">u1": "|u1", "M8[D/24]": "<M8[h]", "i4,f8": "|V12",
	}
	for s, want := range good {
		got, err := ParseDescr(s)
		assert.NoError(t, err, "ParseDescr(%q) = %v, %v; want %s", s, got, err, want)
		assert.Equal(t, want, got.String(), "ParseDescr(%q) = %v, %v; want %s", s, got, err, want)
	}
	bad := map[string]error{
		"": ErrUnsupportedDtype, "<": ErrUnsupportedDtype, "O": ErrObjectDtype, "|O": ErrObjectDtype, "|O8": ErrObjectDtype,
		"<b2": ErrUnsupportedDtype, "<i3": ErrUnsupportedDtype, "<i16": ErrUnsupportedDtype, "<f1": ErrUnsupportedDtype,
		"<c4": ErrUnsupportedDtype, "<i-4": ErrUnsupportedDtype, "?1": ErrUnsupportedDtype, "2f4": ErrUnsupportedDtype,
		"!f4": ErrUnsupportedDtype, "<f4 ": ErrUnsupportedDtype, "<<f4": ErrUnsupportedDtype, "<float32": ErrUnsupportedDtype,
		"O,i4": ErrObjectDtype, "M8[ms/3]": ErrUnsupportedDtype,
	}
	for s, want := range bad {
		_, err := ParseDescr(s)
		assert.ErrorIs(t, err, want, "ParseDescr(%q) = %v, want %v", s, err, want)
	}
}

func TestParseFileErrorNamesFileAndOffset(t *testing.T) {
	file := rawNPY(1, dict("'<f4'", "False", "(2,)"), 7)
	path := filepath.Join(t.TempDir(), "x.npy")
	require.NoError(t, os.WriteFile(path, file, 0o644))
	_, err := ParseFile(path)
	var e *Error
	require.ErrorAs(t, err, &e, "got %v, want *Error of ErrDataLength", err)
	require.ErrorIs(t, err, ErrDataLength, "got %v, want *Error of ErrDataLength", err)
	if assert.Equal(t, path, e.Path, "path %q offset %d, want %q %d", e.Path, e.Offset, path, len(file)-7) {
		assert.Equal(t, int64(len(file)-7), e.Offset, "path %q offset %d, want %q %d", e.Path, e.Offset, path, len(file)-7)
	}
	for _, part := range []string{path, "<f4[2] needs 2 items of 4 bytes, the file has 7 bytes after the header", "truncated"} {
		assert.ErrorContains(t, err, part, "message %q lacks %q", err, part)
	}
	_, err = ParseFile(filepath.Join(t.TempDir(), "missing.npy"))
	assert.ErrorIs(t, err, ErrRead, "missing file: got %v, want ErrRead", err)
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

type errReaderAt struct{ err error }

func (e errReaderAt) ReadAt([]byte, int64) (int, error) { return 0, e.err }

func TestParseHeaderIO(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, Encode(&buf, Array{Descr: "|u1", Shape: []int64{1 << 20}, Data: make([]byte, 1<<20)}))
	h, err := ParseHeader(strictReader{t, bytes.NewReader(buf.Bytes()), 128}, int64(buf.Len()))
	require.NoError(t, err)
	assert.EqualValues(t, 128, h.DataOffset, "DataOffset %d, want 128", h.DataOffset)
	// A header length over the cap is refused before it is read.
	b := rawNPY(2, "", 0)
	binary.LittleEndian.PutUint32(b[8:], 1<<31)
	_, err = ParseHeader(strictReader{t, bytes.NewReader(b), 12}, 1<<40)
	assert.ErrorIs(t, err, ErrHeaderTooLarge, "got %v, want ErrHeaderTooLarge", err)
	ioErr := errors.New("device gone")
	_, err = ParseHeader(errReaderAt{ioErr}, 100)
	assert.ErrorIs(t, err, ErrRead, "got %v, want ErrRead wrapping the cause", err)
	assert.ErrorIs(t, err, ioErr, "got %v, want ErrRead wrapping the cause", err)
	// A size larger than what the reader holds is a truncated file.
	_, err = ParseHeader(bytes.NewReader(buf.Bytes()[:64]), int64(buf.Len()))
	assert.ErrorIs(t, err, ErrHeaderTruncated, "got %v, want ErrHeaderTruncated", err)
}

// TestPython2File reads the .npy file numpy's own tests keep from Python 2
// on Windows, whose shape is "(2L,)" (a Python 2 long), and its Python 3
// twin; the Python 2 object array stays refused.
func TestPython2File(t *testing.T) {
	for _, name := range []string{"win64python2.npy", "python3.npy"} {
		h, err := ParseFile(filepath.Join("testdata", name))
		require.NoError(t, err, "%s", name)
		data, err := os.ReadFile(filepath.Join("testdata", name))
		require.NoError(t, err)
		one := []byte{0, 0, 0, 0, 0, 0, 0xf0, 0x3f} // 1.0 as <f8
		assert.Equal(t, "<f8", h.Dtype.String(), "%s: %s%v", name, h.Dtype, h.Shape)
		assert.True(t, equalShape(h.Shape, []int64{2}), "%s: %s%v", name, h.Dtype, h.Shape)
		assert.Equal(t, append(one, one...), data[h.DataOffset:h.DataOffset+h.DataLen], "%s: %s%v, data", name, h.Dtype, h.Shape)
	}
	_, err := ParseFile(filepath.Join("testdata", "py2-objarr.npy"))
	assert.ErrorIs(t, err, ErrObjectDtype, "py2-objarr.npy: %v, want ErrObjectDtype", err)
}
