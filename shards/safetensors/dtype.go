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

// dtypeRanks is the reference implementation's Dtype enumeration order,
// which it declares "in increasing alignment order" and which its writer
// sorts by (descending) before the tensor name. Dtypes of equal size are
// therefore not in name order: U64 comes before I64, F64 and C64. The
// FNUZ float8 types, which the reference lacks, follow its float8 types.
var dtypeRanks = map[string]int{
	"BOOL": 0, "F4": 1, "F6_E2M3": 2, "F6_E3M2": 3, "U8": 4, "I8": 5,
	"F8_E5M2": 6, "F8_E4M3": 7, "F8_E8M0": 8, "F8_E4M3FNUZ": 9, "F8_E5M2FNUZ": 10,
	"I16": 11, "U16": 12, "F16": 13, "BF16": 14,
	"I32": 15, "U32": 16, "F32": 17, "C64": 18, "F64": 19, "I64": 20, "U64": 21,
}
