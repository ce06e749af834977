package safetensors

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// MaxIndexSize bounds the size of an index file ParseIndex reads.
const MaxIndexSize = 64 << 20

// Index is a sharded checkpoint's *.safetensors.index.json.
type Index struct {
	// Path is the index file's path; shard names are relative to its directory.
	Path string
	// Metadata is the free-form "metadata" object (e.g. "total_size"); nil if absent.
	Metadata map[string]any
	// WeightMap maps each tensor name to the shard file holding it.
	WeightMap map[string]string
	// Files are the distinct shard names of WeightMap, sorted.
	Files []string
}

// FilePaths returns the paths of Files joined to the index's directory.
func (ix *Index) FilePaths() []string {
	dir := filepath.Dir(ix.Path)
	out := make([]string, len(ix.Files))
	for i, f := range ix.Files {
		out[i] = filepath.Join(dir, filepath.FromSlash(f))
	}
	return out
}

// ParseIndex reads and validates the index file at path: a JSON object with
// a "weight_map" object of tensor name to shard file name and an optional
// "metadata" object. Tensor names must be unique; shard names must be
// plain relative names that stay inside the index's directory (no "..",
// no absolute path, no backslash or NUL). Other top-level keys are ignored.
func ParseIndex(path string) (*Index, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &Error{Path: path, Offset: -1, Kind: ErrRead, Err: err}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxIndexSize+1))
	if err != nil {
		return nil, &Error{Path: path, Offset: -1, Kind: ErrRead, Err: err}
	}
	if len(data) > MaxIndexSize {
		return nil, &Error{Path: path, Offset: -1, Kind: ErrIndex, Detail: fmt.Sprintf("file is larger than %d bytes", MaxIndexSize)}
	}
	return DecodeIndex(data, path)
}

// DecodeIndex decodes and validates index JSON read from path (a path or
// URL, which errors name and Index.Path keeps), as ParseIndex does for a
// file it reads itself.
func DecodeIndex(data []byte, path string) (*Index, error) {
	if len(data) > MaxIndexSize {
		return nil, &Error{Path: path, Offset: -1, Kind: ErrIndex, Detail: fmt.Sprintf("file is larger than %d bytes", MaxIndexSize)}
	}
	ix, err := parseIndex(data)
	if err != nil {
		return nil, withPath(err, path)
	}
	ix.Path = path
	return ix, nil
}

// parseIndex decodes and validates index JSON.
func parseIndex(data []byte) (*Index, error) {
	var top struct {
		Metadata  map[string]any  `json:"metadata"`
		WeightMap json.RawMessage `json:"weight_map"`
	}
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, &Error{Offset: -1, Kind: ErrIndex, Detail: "not a JSON object with an object \"metadata\"", Err: err}
	}
	if len(top.WeightMap) == 0 || string(top.WeightMap) == "null" {
		return nil, &Error{Offset: -1, Kind: ErrIndex, Detail: `no "weight_map"`}
	}
	wm, err := decodeWeightMap(top.WeightMap)
	if err != nil {
		return nil, err
	}
	files := make(map[string]struct{})
	for name, file := range wm {
		if !plainRelative(file) {
			return nil, &Error{Tensor: name, Offset: -1, Kind: ErrIndexFileName, Detail: fmt.Sprintf("shard %q", file)}
		}
		files[file] = struct{}{}
	}
	return &Index{Metadata: top.Metadata, WeightMap: wm, Files: slices.Sorted(maps.Keys(files))}, nil
}

// decodeWeightMap decodes an object of strings token by token so duplicate
// tensor names are caught instead of silently overwritten.
func decodeWeightMap(raw []byte) (map[string]string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	bad := func(detail string) error {
		return &Error{Offset: -1, Kind: ErrIndex, Detail: `"weight_map": ` + detail}
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, bad("not an object")
	}
	wm := make(map[string]string)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, bad(err.Error())
		}
		name, _ := tok.(string)
		if _, dup := wm[name]; dup {
			return nil, &Error{Tensor: name, Offset: -1, Kind: ErrDuplicateTensor, Detail: `named twice in "weight_map"`}
		}
		tok, err = dec.Token()
		file, ok := tok.(string)
		if err != nil || !ok {
			return nil, bad(fmt.Sprintf("value of %q is not a string", name))
		}
		wm[name] = file
	}
	if len(wm) == 0 {
		return nil, bad("no tensors")
	}
	return wm, nil
}

// plainRelative reports whether name is a relative slash-separated path
// with no ".." element that cannot leave its directory.
func plainRelative(name string) bool {
	if !filepath.IsLocal(name) || strings.ContainsAny(name, "\\\x00") || strings.HasPrefix(name, "/") {
		return false
	}
	for _, el := range strings.Split(name, "/") {
		if el == ".." {
			return false
		}
	}
	return true
}
