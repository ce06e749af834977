package safetensors

import "slices"

// DtypeBits returns the size in bits of one element of dtype, and false when
// dtype is not a dtype of the safetensors specification. Names are
// case-sensitive, as in the reference implementation. Sub-byte dtypes (F4 is
// 4 bits, F6_E2M3 and F6_E3M2 are 6) are packed, so a tensor of them must
// fill whole bytes.
func DtypeBits(dtype string) (int64, bool) {
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

// Dtypes returns every dtype DtypeBits knows, sorted by name. The caller owns
// the returned slice.
func Dtypes() []string {
	d := []string{
		"BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "F8_E8M0", "F8_E4M3FNUZ", "F8_E5M2FNUZ",
		"I16", "U16", "F16", "BF16", "I32", "U32", "F32", "C64", "F64", "I64", "U64",
		"F4", "F6_E2M3", "F6_E3M2",
	}
	slices.Sort(d)
	return d
}
