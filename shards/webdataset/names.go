package webdataset

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Shard names are file names, and Linux file names are bytes: a name need
// not be valid UTF-8 (Latin-1 names from an old archive, say). JSON strings
// are Unicode, and encoding/json replaces each invalid byte with U+FFFD,
// so a manifest written that way names files that do not exist.
//
// A manifest therefore writes each byte that is not part of valid UTF-8 as
// the escape \udcXX (XX the byte, 80 to ff): a lone low surrogate, which no
// Unicode text contains. This is PEP 383's "surrogateescape", the way
// Python itself holds such names: in Python, json.load gives the name as
// os.listdir would, and os.fsencode turns it back into the file's bytes.
// The rest of the name is written as encoding/json writes it, so manifests
// of UTF-8 names are byte for byte what they were, and old manifests read
// as before (they hold no lone surrogates).

// appendNameJSON appends name to dst as a JSON string (see above).
func appendNameJSON(dst []byte, name string) []byte {
	dst = append(dst, '"')
	for len(name) > 0 {
		// The longest valid prefix, as encoding/json writes it.
		n := 0
		for n < len(name) {
			r, size := utf8.DecodeRuneInString(name[n:])
			if r == utf8.RuneError && size == 1 {
				break
			}
			n += size
		}
		if n > 0 {
			b, _ := json.Marshal(name[:n]) // a valid UTF-8 string always encodes
			dst = append(dst, b[1:len(b)-1]...)
			name = name[n:]
			continue
		}
		dst = append(dst, `\udc`...)
		dst = strconv.AppendUint(dst, uint64(name[0])>>4, 16)
		dst = strconv.AppendUint(dst, uint64(name[0])&15, 16)
		name = name[1:]
	}
	return append(dst, '"')
}

// errNameSurrogate reports a \u escape for a lone surrogate that is not an
// escaped byte (\udc80 to \udcff).
var errNameSurrogate = errors.New("lone surrogate escape that is not an escaped byte (\\udc80 to \\udcff)")

// decodeNameJSON decodes a JSON string (quotes included) written by
// appendNameJSON or by any JSON writer: \udc80 to \udcff become the bytes
// 0x80 to 0xff; raw bytes that are not valid UTF-8 are kept as they are.
// s must be a syntactically valid JSON string (encoding/json checks the
// document before it calls UnmarshalJSON).
func decodeNameJSON(s []byte) (string, error) {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return "", fmt.Errorf("name %s is not a JSON string", s)
	}
	s = s[1 : len(s)-1]
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		if i+1 >= len(s) {
			return "", errors.New("name ends inside an escape")
		}
		i++
		switch s[i] {
		case '"', '\\', '/':
			out = append(out, s[i])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(s[i+1:])
			if !ok {
				return "", errors.New(`name has a malformed \u escape`)
			}
			i += 4
			switch {
			case r >= 0xdc80 && r <= 0xdcff:
				out = append(out, byte(r))
				continue
			case utf16.IsSurrogate(r):
				if r < 0xdc00 && i+6 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
					if r2, ok := hex4(s[i+3:]); ok && r2 >= 0xdc00 && r2 <= 0xdfff {
						out = utf8.AppendRune(out, utf16.DecodeRune(r, r2))
						i += 6
						continue
					}
				}
				return "", fmt.Errorf("name has a %w: \\u%04x", errNameSurrogate, r)
			}
			out = utf8.AppendRune(out, r)
		default:
			return "", fmt.Errorf("name has an unknown escape \\%c", s[i])
		}
	}
	return string(out), nil
}

// hex4 parses the four hex digits at the start of s.
func hex4(s []byte) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	v, err := strconv.ParseUint(string(s[:4]), 16, 32)
	return rune(v), err == nil
}

// shardEntryJSON is ShardEntry with the name encoded by hand; Name comes
// first so it is the first key written.
type shardEntryJSON struct {
	Name json.RawMessage `json:"name"`
	shardEntryFields
}

type shardEntryFields ShardEntry

// MarshalJSON writes the entry with its name escaped as described in
// docs/ITERATOR.md: bytes of the name that are not valid UTF-8 as \udcXX.
func (e ShardEntry) MarshalJSON() ([]byte, error) {
	return json.Marshal(shardEntryJSON{Name: appendNameJSON(nil, e.Name), shardEntryFields: shardEntryFields(e)})
}

// UnmarshalJSON reads an entry written by MarshalJSON, or by an older
// gdsload or another tool (plain JSON strings).
func (e *ShardEntry) UnmarshalJSON(b []byte) error {
	var v shardEntryJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*e = ShardEntry(v.shardEntryFields)
	e.Name = ""
	if len(v.Name) > 0 && string(v.Name) != "null" {
		name, err := decodeNameJSON(v.Name)
		if err != nil {
			return err
		}
		e.Name = name
	}
	return nil
}
