package npy

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// maxDims is numpy's bound on the dimensions of an array (NPY_MAXDIMS).
const maxDims = 32

// descrDtype is numpy.lib.format.descr_to_dtype: the dtype a header's descr
// value makes, and for a subarray descr its shape.
func descrDtype(v pyValue, depth int) (Dtype, []int64, error) {
	if depth > maxNesting {
		return Dtype{}, nil, unsupported(v.str, "nested too deeply")
	}
	switch v.kind {
	case pyStr:
		return parseDescrString(v.str)
	case pyTuple:
		// (dtype, shape): numpy reads descr[0] and descr[1] only.
		if len(v.items) < 2 {
			return Dtype{}, nil, &Error{Offset: -1, Kind: ErrUnsupportedDtype, Detail: "a tuple descr needs a dtype and a shape"}
		}
		base, sub, err := descrDtype(v.items[0], depth+1)
		if err != nil {
			return Dtype{}, nil, err
		}
		return subarray(base, sub, v.items[1])
	}
	fields, ok := iterItems(v)
	if !ok {
		return Dtype{}, nil, &Error{Offset: -1, Kind: ErrFieldType, Detail: fmt.Sprintf("descr is %v, want a string, a list of fields or a (dtype, shape) tuple", v.kind)}
	}
	d, err := structured(fields, depth)
	return d, nil, err
}

// iterItems is what Python's iteration over v gives, for the kinds whose
// order is defined (a set of more than one string is not).
func iterItems(v pyValue) ([]pyValue, bool) {
	switch v.kind {
	case pyTuple, pyList:
		return v.items, true
	case pyDict:
		return v.keys, true
	case pySet:
		return v.items, len(v.items) <= 1
	case pyStr:
		var out []pyValue
		for _, r := range v.str {
			out = append(out, pyValue{kind: pyStr, str: string(r), at: v.at})
		}
		return out, true
	case pyBytes:
		var out []pyValue
		for i := 0; i < len(v.str); i++ {
			out = append(out, pyValue{kind: pyInt, i: int64(v.str[i]), at: v.at})
		}
		return out, true
	}
	return nil, false
}

// structured builds a record from descr fields as descr_to_dtype does:
// each field is (name, descr) or (name, descr, shape), a name is a string
// or a (title, name) pair, fields follow each other without padding but
// for unnamed void fields, which only take room.
func structured(fields []pyValue, depth int) (Dtype, error) {
	d := Dtype{ByteOrder: '|', Kind: 'V', Fields: []Field{}}
	seen := map[string]bool{}
	bad := func(format string, args ...any) (Dtype, error) {
		return Dtype{}, &Error{Offset: -1, Kind: ErrUnsupportedDtype, Detail: fmt.Sprintf(format, args...)}
	}
	for i, fv := range fields {
		parts, ok := iterItems(fv)
		if !ok || len(parts) != 2 && len(parts) != 3 {
			return bad("field %d is %v of %d items, want (name, dtype) or (name, dtype, shape)", i, fv.kind, len(parts))
		}
		fd, sub, err := descrDtype(parts[1], depth+1)
		if err != nil {
			return Dtype{}, err
		}
		if len(parts) == 3 {
			if fd, sub, err = subarray(fd, sub, parts[2]); err != nil {
				return Dtype{}, err
			}
		}
		size := fd.ItemSize
		for _, n := range sub {
			size *= n // bounded by subarray's checks
		}
		name, title := parts[0], pyValue{kind: pyNone}
		if name.kind == pyTuple {
			if len(name.items) != 2 {
				return bad("field %d: a (title, name) pair has %d items", i, len(name.items))
			}
			title, name = name.items[0], name.items[1]
		}
		if name.kind != pyStr {
			return bad("field %d: name is %v, want a string", i, name.kind)
		}
		pad := parts[0].kind == pyStr && name.str == "" && (len(sub) > 0 || fd.Kind == 'V' && fd.Fields == nil)
		if !pad {
			f := Field{Name: name.str, Offset: d.ItemSize, Dtype: fd, Shape: sub}
			if title.kind == pyStr {
				f.Title = title.str
			}
			// Names, and titles that are strings, are unique among both.
			if seen[name.str] {
				return bad("field name %q already used as a name or title", name.str)
			}
			seen[name.str] = true
			if title.kind == pyStr {
				if seen[title.str] {
					return bad("field title %q already used as a name or title", title.str)
				}
				seen[title.str] = true
			}
			d.Fields = append(d.Fields, f)
		}
		if d.ItemSize += size; d.ItemSize > maxItemSize {
			return bad("record of more than %d bytes", maxItemSize)
		}
	}
	return d, nil
}

// subarray is numpy.dtype((base, spec)) for a base that may itself be a
// subarray (of shape inner): (flexible, n) sizes a bytes, text or void
// dtype; (base, 1) and (base, ()) are base; an int or a sequence of ints is
// a shape, outermost first.
func subarray(base Dtype, inner []int64, spec pyValue) (Dtype, []int64, error) {
	bad := func(why string) (Dtype, []int64, error) {
		return Dtype{}, nil, &Error{Offset: -1, Kind: ErrUnsupportedDtype, Detail: "subarray " + why}
	}
	if spec.kind == pyInt && len(inner) == 0 && base.ItemSize == 0 && base.Fields == nil && strings.IndexByte("SUV", base.Kind) >= 0 {
		// (flexible, size): 'S' 5 is S5, 'U' 3 is U3.
		n := spec.i
		if base.Kind == 'U' {
			n *= 4
		}
		if n < 0 || n > maxItemSize {
			return bad(fmt.Sprintf("item size %d", spec.i))
		}
		base.ItemSize = n
		return base, nil, nil
	}
	var dims []int64
	switch spec.kind {
	case pyInt:
		if spec.i == 1 {
			return base, inner, nil // numpy 1.24: (type, 1) is type
		}
		dims = []int64{spec.i}
	case pyTuple, pyList:
		if len(spec.items) == 0 && spec.kind == pyTuple {
			return base, inner, nil
		}
		for _, it := range spec.items {
			if it.kind != pyInt {
				return bad(fmt.Sprintf("shape has %v, want ints", it.kind))
			}
			dims = append(dims, it.i)
		}
	default:
		return bad(fmt.Sprintf("shape is %v, want an int or a tuple of ints ((base, new) unions and metadata dicts are not supported)", spec.kind))
	}
	if len(dims)+len(inner) > maxDims {
		return bad(fmt.Sprintf("of %d dimensions, more than %d", len(dims)+len(inner), maxDims))
	}
	items := int64(1)
	for _, n := range dims {
		if n < 0 || n > math.MaxInt32 {
			return bad(fmt.Sprintf("dimension %d", n))
		}
		if items *= n; items > math.MaxInt32 {
			return bad("of more than 2^31 items")
		}
	}
	size := base.ItemSize
	for _, n := range inner {
		size *= n
	}
	if items != 0 && size > maxItemSize/items {
		return bad(fmt.Sprintf("of more than %d bytes", maxItemSize))
	}
	return base, append(dims, inner...), nil
}

// isCommaString is numpy's _check_for_commastring: a descr that starts
// with a digit (after a byte order) or with "()", or holds a comma outside
// brackets, is a list of formats.
func isCommaString(s string) bool {
	order := func(c byte) bool { return strings.IndexByte("<>=|", c) >= 0 }
	digit := func(c byte) bool { return c >= '0' && c <= '9' }
	switch {
	case s == "":
		return false
	case digit(s[0]) || len(s) > 1 && order(s[0]) && digit(s[1]):
		return true
	case strings.HasPrefix(s, "()") || len(s) > 3 && order(s[0]) && s[1:3] == "()":
		return true
	}
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ',':
			if depth == 0 {
				return true
			}
		case '[':
			depth++
		case ']':
			depth--
		}
	}
	return false
}

// numpy 1.24's _commastring expressions.
var (
	formatRE = regexp.MustCompile(`^([<>|=]?)( *[(]?[ ,0-9]*[)]? *)([<>|=]?)([A-Za-z0-9.?]*(?:\[[a-zA-Z0-9,.]+\])?)`)
	sepRE    = regexp.MustCompile(`^\s*,\s*`)
	spaceRE  = regexp.MustCompile(`^\s+$`)
)

// parseCommaString is numpy's _convert_from_commastring: formats with
// byte orders and repeat counts, separated by commas; one format is that
// dtype, several a record of fields f0, f1, ...
func parseCommaString(descr string) (Dtype, []int64, error) {
	type item struct {
		d   Dtype
		sub []int64
	}
	var items []item
	for rest := descr; rest != ""; {
		m := formatRE.FindStringSubmatch(rest)
		if m == nil {
			return Dtype{}, nil, unsupported(descr, fmt.Sprintf("format %d is not recognized", len(items)+1))
		}
		rest = rest[len(m[0]):]
		if rest != "" {
			if spaceRE.MatchString(rest) {
				rest = ""
			} else if sep := sepRE.FindString(rest); sep != "" {
				rest = rest[len(sep):]
			} else {
				return Dtype{}, nil, unsupported(descr, fmt.Sprintf("format %d is not recognized", len(items)+1))
			}
		}
		order1, repeats, order2, format := m[1], m[2], m[3], m[4]
		order := order1
		if order2 != "" {
			order = order2
			if order1 != "" && nativeOrder(order1) != nativeOrder(order2) {
				return Dtype{}, nil, unsupported(descr, fmt.Sprintf("inconsistent byte orders %s and %s", order1, order2))
			}
		}
		if order == "|" || order == "=" || order == "<" {
			order = ""
		}
		d, sub, err := parseDescrString(order + format)
		if err != nil {
			return Dtype{}, nil, err
		}
		if repeats != "" {
			v, lerr := evalLiteral(repeats, false)
			if lerr != nil {
				return Dtype{}, nil, unsupported(descr, fmt.Sprintf("repeat count %q: %s", repeats, lerr.msg))
			}
			if d, sub, err = subarray(d, sub, v); err != nil {
				return Dtype{}, nil, err
			}
		}
		items = append(items, item{d, sub})
	}
	if len(items) == 1 {
		return items[0].d, items[0].sub, nil
	}
	rec := Dtype{ByteOrder: '|', Kind: 'V', Fields: []Field{}}
	for i, it := range items {
		rec.Fields = append(rec.Fields, Field{Name: "f" + strconv.Itoa(i), Offset: rec.ItemSize, Dtype: it.d, Shape: it.sub})
		size := it.d.ItemSize
		for _, n := range it.sub {
			size *= n
		}
		if rec.ItemSize += size; rec.ItemSize > maxItemSize {
			return Dtype{}, nil, unsupported(descr, fmt.Sprintf("record of more than %d bytes", maxItemSize))
		}
	}
	return rec, nil, nil
}

// nativeOrder maps "=" to the machine's order, little-endian.
func nativeOrder(o string) string {
	if o == "=" {
		return "<"
	}
	return o
}

// isDatetimeTypestr is numpy's is_datetime_typestr.
func isDatetimeTypestr(s string) bool {
	return len(s) >= 2 && s[1] == '8' && (s[0] == 'M' || s[0] == 'm') ||
		strings.HasPrefix(s, "datetime64") || strings.HasPrefix(s, "timedelta64")
}

// datetime units, coarsest first, as numpy numbers them (B, removed, left
// out).
var datetimeUnits = []string{"Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps", "fs", "as"}

// parseDatetime parses "M8[unit]", "datetime64[25s]", "m8[s/1000]" and the
// generic "M8", as numpy's parse_dtype_from_datetime_typestr does.
func parseDatetime(descr, s string) (Dtype, error) {
	d := Dtype{ByteOrder: '<', ItemSize: 8}
	var meta string
	switch {
	case s[1] == '8' && (s[0] == 'M' || s[0] == 'm'):
		d.Kind, meta = s[0], s[2:]
	case strings.HasPrefix(s, "timedelta64"):
		d.Kind, meta = 'm', s[len("timedelta64"):]
	default:
		d.Kind, meta = 'M', s[len("datetime64"):]
	}
	if meta == "" {
		return d, nil
	}
	if len(meta) < 3 || meta[0] != '[' || meta[len(meta)-1] != ']' {
		return Dtype{}, unsupported(descr, "datetime metadata must be a unit in brackets, such as [ns]")
	}
	body := meta[1 : len(meta)-1]
	// [num]unit[/den], num and den as strtol reads them.
	num := int64(1)
	k := 0
	if t := strings.TrimLeft(body, " \t\n\v\f\r"); t != "" && (t[0] == '+' || t[0] == '-' || t[0] >= '0' && t[0] <= '9') {
		j := len(body) - len(t)
		if t[0] == '+' || t[0] == '-' {
			j++
		}
		e := j
		for e < len(body) && body[e] >= '0' && body[e] <= '9' {
			e++
		}
		if e > j {
			n, ok := cStrtol(body[:e])
			if !ok || n < 0 || n > math.MaxInt32 {
				return Dtype{}, unsupported(descr, "invalid datetime multiple")
			}
			num, k = n, e
		}
	}
	unitStr, den := body[k:], ""
	if slash := strings.IndexByte(unitStr, '/'); slash >= 0 {
		unitStr, den = unitStr[:slash], unitStr[slash+1:]
	}
	if unitStr == "μs" {
		unitStr = "us"
	}
	unit := -1
	for i, u := range datetimeUnits {
		if u == unitStr {
			unit = i
		}
	}
	if unitStr == "generic" {
		if den != "" || num != 1 {
			return Dtype{}, unsupported(descr, "the generic datetime unit takes no multiple or divisor")
		}
		return d, nil
	}
	if unit < 0 {
		return Dtype{}, unsupported(descr, fmt.Sprintf("unknown datetime unit %q", unitStr))
	}
	if den != "" {
		n, ok := cStrtol(den)
		if !ok || n <= 0 || n > math.MaxInt32 {
			return Dtype{}, unsupported(descr, "invalid datetime divisor")
		}
		var err error
		if unit, num, err = divideUnit(unit, num, n); err != nil {
			return Dtype{}, unsupported(descr, err.Error())
		}
	}
	d.Unit = datetimeUnits[unit]
	if num != 1 {
		d.Unit = strconv.FormatInt(num, 10) + d.Unit
	}
	return d, nil
}

// divideUnit is numpy's convert_datetime_divisor_to_multiple: unit/den as
// a multiple of a finer unit.
func divideUnit(unit int, num, den int64) (int, int64, error) {
	var tries []int64
	var finer []int
	switch datetimeUnits[unit] {
	case "Y":
		tries, finer = []int64{12, 52, 365}, []int{1, 2, 3}
	case "M":
		tries, finer = []int64{4, 30, 720}, []int{2, 3, 4}
	case "W":
		tries, finer = []int64{7, 168, 10080}, []int{3, 4, 5}
	case "D":
		tries, finer = []int64{24, 1440, 86400}, []int{4, 5, 6}
	case "h":
		tries, finer = []int64{60, 3600}, []int{5, 6}
	case "m":
		tries, finer = []int64{60, 60000}, []int{6, 7}
	default:
		for i, n := range []int64{1000, 1000000} {
			if unit+1+i < len(datetimeUnits) {
				tries, finer = append(tries, n), append(finer, unit+1+i)
			}
		}
	}
	for i, t := range tries {
		if t%den == 0 {
			return finer[i], num * (t / den), nil
		}
	}
	return 0, 0, fmt.Errorf("divisor (%d) is not a multiple of a lower unit", den)
}
