package safetensors

import "strconv"

// loneSurrogate returns the header offset of the first \u escape in a JSON
// string that encodes half of a UTF-16 surrogate pair, or -1. serde_json,
// which the reference uses, rejects those; encoding/json silently turns them
// into U+FFFD, so they are caught here first. Malformed escapes are left to
// the JSON decoder.
func loneSurrogate(b []byte) int {
	inString := false
	for i := 0; i < len(b); i++ {
		switch {
		case !inString:
			inString = b[i] == '"'
		case b[i] == '"':
			inString = false
		case b[i] == '\\' && i+1 < len(b):
			if b[i+1] != 'u' {
				i++ // a one-character escape such as \" or \\
				continue
			}
			v, ok := hex4(b, i+2)
			switch {
			case !ok:
				return -1 // the decoder reports the bad escape
			case v >= 0xDC00 && v <= 0xDFFF:
				return i
			case v >= 0xD800 && v <= 0xDBFF:
				low, ok := hex4(b, i+8)
				if !ok || b[i+6] != '\\' || b[i+7] != 'u' || low < 0xDC00 || low > 0xDFFF {
					return i
				}
				i += 11
			default:
				i += 5
			}
		}
	}
	return -1
}

// hex4 parses the four hex digits at b[i:i+4].
func hex4(b []byte, i int) (uint64, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(b[i:i+4]), 16, 32)
	return v, err == nil
}
