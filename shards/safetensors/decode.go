package safetensors

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
)

// metadataKey is the reserved top-level key holding string metadata.
const metadataKey = "__metadata__"

// rawTensor is a tensor entry as decoded, before size and offset checks.
type rawTensor struct {
	name       string
	dtype      string
	shape      []int64
	begin, end int64
	at         int64 // file offset of the entry's key, for error messages
}

// headerDecoder walks the header token by token: encoding/json's Unmarshal
// silently keeps the last of duplicate keys, and the reference rejects
// unknown fields, so both need to be seen key by key.
type headerDecoder struct {
	dec *json.Decoder
}

// decodeHeader decodes the JSON header (already checked to be UTF-8). Offsets
// in errors are file offsets (header offset + 8).
func decodeHeader(buf []byte) (map[string]string, []rawTensor, error) {
	d := headerDecoder{dec: json.NewDecoder(bytes.NewReader(buf))}
	d.dec.UseNumber()
	tok, err := d.token("")
	if err != nil {
		return nil, nil, err
	}
	if tok != json.Delim('{') {
		return nil, nil, d.fail("", ErrHeaderNotObject, fmt.Sprintf("header starts with %s", describe(tok)))
	}
	var meta map[string]string
	var raw []rawTensor
	seen := make(map[string]struct{})
	for d.dec.More() {
		at := d.pos()
		tok, err := d.token("")
		if err != nil {
			return nil, nil, err
		}
		name := tok.(string) // inside an object the decoder only yields string keys
		if _, dup := seen[name]; dup {
			return nil, nil, &Error{Tensor: name, Offset: at, Kind: ErrDuplicateTensor,
				Detail: "the name appears more than once in the header"}
		}
		seen[name] = struct{}{}
		if name == metadataKey {
			if meta, err = d.metadata(); err != nil {
				return nil, nil, err
			}
			continue
		}
		t, err := d.tensor(name, at)
		if err != nil {
			return nil, nil, err
		}
		raw = append(raw, t)
	}
	if _, err := d.token(""); err != nil { // the closing '}'
		return nil, nil, err
	}
	if tok, err := d.dec.Token(); err != io.EOF {
		if err != nil {
			return nil, nil, d.syntax("", err)
		}
		return nil, nil, d.fail("", ErrInvalidJSON, fmt.Sprintf("%s after the header object", describe(tok)))
	}
	return meta, raw, nil
}

// metadata decodes the value of "__metadata__": null or an object of strings.
func (d *headerDecoder) metadata() (map[string]string, error) {
	tok, err := d.token("")
	if err != nil {
		return nil, err
	}
	if tok == nil {
		return nil, nil
	}
	if tok != json.Delim('{') {
		return nil, d.fail("", ErrMetadata, fmt.Sprintf("found %s", describe(tok)))
	}
	meta := make(map[string]string)
	for d.dec.More() {
		tok, err := d.token("")
		if err != nil {
			return nil, err
		}
		key := tok.(string)
		if _, dup := meta[key]; dup {
			return nil, d.fail("", ErrMetadata, fmt.Sprintf("key %q appears twice", key))
		}
		if tok, err = d.token(""); err != nil {
			return nil, err
		}
		v, ok := tok.(string)
		if !ok {
			return nil, d.fail("", ErrMetadata, fmt.Sprintf("value of %q is %s, want a string", key, describe(tok)))
		}
		meta[key] = v
	}
	_, err = d.token("")
	return meta, err
}

// tensor decodes one tensor entry; at is the file offset of its key.
func (d *headerDecoder) tensor(name string, at int64) (rawTensor, error) {
	t := rawTensor{name: name, at: at}
	tok, err := d.token(name)
	if err != nil {
		return t, err
	}
	if tok != json.Delim('{') {
		return t, d.fail(name, ErrInvalidTensor, fmt.Sprintf("entry is %s, want an object", describe(tok)))
	}
	var hasDtype, hasShape, hasOffsets bool
	for d.dec.More() {
		tok, err := d.token(name)
		if err != nil {
			return t, err
		}
		field := tok.(string)
		var dup bool
		switch field {
		case "dtype":
			dup, hasDtype = hasDtype, true
			if !dup {
				if tok, err = d.token(name); err != nil {
					return t, err
				}
				s, ok := tok.(string)
				if !ok {
					return t, d.fail(name, ErrInvalidTensor, fmt.Sprintf("dtype is %s, want a string", describe(tok)))
				}
				t.dtype = s
			}
		case "shape":
			dup, hasShape = hasShape, true
			if !dup {
				if t.shape, err = d.uints(name, ErrInvalidShape, ErrShapeOverflow); err != nil {
					return t, err
				}
				if t.shape == nil {
					t.shape = []int64{}
				}
			}
		case "data_offsets":
			dup, hasOffsets = hasOffsets, true
			if !dup {
				offs, err := d.uints(name, ErrInvalidOffsets, ErrInvalidOffsets)
				if err != nil {
					return t, err
				}
				if len(offs) != 2 {
					return t, d.fail(name, ErrInvalidOffsets, fmt.Sprintf("found %d values", len(offs)))
				}
				t.begin, t.end = offs[0], offs[1]
			}
		default:
			return t, d.fail(name, ErrUnknownField, fmt.Sprintf("field %q; allowed are dtype, shape, data_offsets", field))
		}
		if dup {
			return t, d.fail(name, ErrDuplicateField, fmt.Sprintf("field %q appears twice", field))
		}
	}
	if _, err := d.token(name); err != nil {
		return t, err
	}
	switch {
	case !hasDtype:
		return t, &Error{Tensor: name, Offset: at, Kind: ErrMissingField, Detail: `no "dtype"`}
	case !hasShape:
		return t, &Error{Tensor: name, Offset: at, Kind: ErrMissingField, Detail: `no "shape"`}
	case !hasOffsets:
		return t, &Error{Tensor: name, Offset: at, Kind: ErrMissingField, Detail: `no "data_offsets"`}
	}
	return t, nil
}

// uints decodes an array of integers in [0, MaxInt64]. Anything else that is
// not an integer fails with bad; integers too large fail with big.
func (d *headerDecoder) uints(name string, bad, big error) ([]int64, error) {
	tok, err := d.token(name)
	if err != nil {
		return nil, err
	}
	if tok != json.Delim('[') {
		return nil, d.fail(name, bad, fmt.Sprintf("found %s, want an array", describe(tok)))
	}
	var out []int64
	for d.dec.More() {
		tok, err := d.token(name)
		if err != nil {
			return nil, err
		}
		num, ok := tok.(json.Number)
		if !ok {
			return nil, d.fail(name, bad, fmt.Sprintf("element %d is %s", len(out), describe(tok)))
		}
		v, err := strconv.ParseUint(string(num), 10, 64)
		if errors.Is(err, strconv.ErrRange) || (err == nil && v > math.MaxInt64) {
			return nil, d.fail(name, big, fmt.Sprintf("element %d is %s, larger than %d", len(out), num, int64(math.MaxInt64)))
		}
		if err != nil {
			return nil, d.fail(name, bad, fmt.Sprintf("element %d is %s", len(out), num))
		}
		out = append(out, int64(v))
	}
	_, err = d.token(name)
	return out, err
}

// token returns the next token, mapping decoder errors to ErrInvalidJSON.
func (d *headerDecoder) token(name string) (json.Token, error) {
	tok, err := d.dec.Token()
	if err != nil {
		return nil, d.syntax(name, err)
	}
	return tok, nil
}

func (d *headerDecoder) syntax(name string, err error) error {
	off := d.pos()
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off = 8 + se.Offset
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return &Error{Tensor: name, Offset: off, Kind: ErrInvalidJSON, Err: err}
}

func (d *headerDecoder) fail(name string, kind error, detail string) error {
	return &Error{Tensor: name, Offset: d.pos(), Kind: kind, Detail: detail}
}

// pos returns the file offset just past the last token read.
func (d *headerDecoder) pos() int64 { return 8 + d.dec.InputOffset() }

// describe names a JSON token for an error message.
func describe(tok json.Token) string {
	switch v := tok.(type) {
	case nil:
		return "null"
	case json.Delim:
		switch v {
		case '{':
			return "an object"
		case '[':
			return "an array"
		}
		return fmt.Sprintf("%q", string(v))
	case string:
		return fmt.Sprintf("string %q", v)
	case json.Number:
		return "number " + string(v)
	case bool:
		return fmt.Sprintf("%t", v)
	}
	return fmt.Sprintf("%v", tok)
}
