// Package jsontext appends JSON text without reflection, byte for byte
// what encoding/json writes, for output lines written often enough that
// encoding/json's cost shows.
package jsontext

import "encoding/json"

// AppendString appends s as encoding/json quotes it: printable ASCII that
// needs no escape (the usual key or file name) as it is, anything else
// through encoding/json itself (escapes, the HTML-safe <, > and &,
// invalid UTF-8).
func AppendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
