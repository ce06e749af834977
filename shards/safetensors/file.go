package safetensors

import (
	"github.com/gdsload/gdsload/internal/regular"
	"io"
	"os"
)

// File is an open safetensors file with its validated header.
type File struct {
	Path   string
	Header *Header
	f      *os.File
}

// Open opens the file at path and parses its header with ParseHeader;
// failures name path. The caller must Close the File.
func Open(path string) (*File, error) {
	f, fi, err := regular.Open(path)
	if err != nil {
		return nil, &Error{Path: path, Offset: -1, Kind: ErrRead, Err: err}
	}
	h, err := ParseHeader(f, fi.Size())
	if err != nil {
		f.Close()
		return nil, withPath(err, path)
	}
	return &File{Path: path, Header: h, f: f}, nil
}

// TensorReader returns a reader of tensor t's bytes, which must be a tensor of
// f.Header. It reads from the file lazily and is valid until Close.
func (f *File) TensorReader(t TensorInfo) *io.SectionReader {
	return io.NewSectionReader(f.f, f.Header.DataOffset+t.Begin, t.Bytes())
}

// Close closes the underlying file.
func (f *File) Close() error { return f.f.Close() }
