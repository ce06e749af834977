package webdataset

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// DefaultMaxExpansions caps how many names Expand may produce.
const DefaultMaxExpansions = 1_000_000

// ErrTooManyExpansions reports a brace pattern that expands to more names
// than allowed.
var ErrTooManyExpansions = errors.New("brace pattern expands to too many names")

// Expand expands a brace pattern the way WebDataset's braceexpand does:
// integer ranges "{000..099}" (zero padding kept when an endpoint has a
// leading zero; optional step "{0..10..2}"; descending and negative bounds),
// letter ranges "{a..e}", comma lists "{a,b}", nesting, several braces (all
// combinations, leftmost varying slowest) and backslash escapes. A brace
// group that is neither a range nor a list stays literal. Unbalanced braces
// are an error (braceexpand lets a few through as literals). At most
// DefaultMaxExpansions names; see ExpandN.
func Expand(pattern string) ([]string, error) {
	return ExpandN(pattern, DefaultMaxExpansions)
}

// ExpandN is Expand with an explicit cap on the number of names; exceeding
// it fails with ErrTooManyExpansions before the names are built.
func ExpandN(pattern string, max int) ([]string, error) {
	e := expander{max: max, pattern: pattern}
	out, err := e.expandPattern(pattern)
	if err != nil {
		return nil, err
	}
	for i, s := range out {
		out[i] = unescape(s)
	}
	return out, nil
}

type expander struct {
	max     int
	pattern string
}

var (
	intRangeRe  = regexp.MustCompile(`^(-?\d+)\.\.(-?\d+)(?:\.\.-?(\d+))?$`)
	charRangeRe = regexp.MustCompile(`^([A-Za-z])\.\.([A-Za-z])(?:\.\.-?(\d+))?$`)
)

const letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

func (e *expander) unbalanced() error {
	return fmt.Errorf("unbalanced braces in pattern %q", e.pattern)
}

// expandPattern expands a sequence of literals and brace groups into the product
// of their expansions.
func (e *expander) expandPattern(p string) ([]string, error) {
	out := []string{""}
	start, depth := 0, 0
	for pos := 0; pos < len(p); pos++ {
		switch p[pos] {
		case '\\':
			pos++
		case '{':
			if depth == 0 && pos > start {
				out = appendAll(out, p[start:pos])
				start = pos
			}
			depth++
		case '}':
			depth--
			if depth < 0 {
				return nil, e.unbalanced()
			}
			if depth == 0 {
				alts, err := e.group(p[start+1 : pos])
				if err != nil {
					return nil, err
				}
				if out, err = e.product(out, alts); err != nil {
					return nil, err
				}
				start = pos + 1
			}
		}
	}
	if depth != 0 {
		return nil, e.unbalanced()
	}
	if start < len(p) {
		out = appendAll(out, p[start:])
	}
	return out, nil
}

// group expands the inside of one brace group.
func (e *expander) group(expr string) ([]string, error) {
	if m := intRangeRe.FindStringSubmatch(expr); m != nil {
		return e.intRange(m[1], m[2], m[3])
	}
	if m := charRangeRe.FindStringSubmatch(expr); m != nil {
		return e.charRange(m[1], m[2], m[3])
	}
	var items []string
	start, depth, isList := 0, 0, false
	for pos := 0; pos < len(expr); pos++ {
		switch expr[pos] {
		case '\\':
			pos++
		case '{':
			depth++
		case '}':
			depth--
		case ',':
			if depth == 0 {
				isList = true
				var err error
				if items, err = e.alternative(items, expr[start:pos]); err != nil {
					return nil, err
				}
				start = pos + 1
			}
		}
	}
	if depth != 0 {
		return nil, e.unbalanced()
	}
	if !isList {
		inner, err := e.expandPattern(expr)
		if err != nil {
			return nil, err
		}
		for i, s := range inner {
			inner[i] = "{" + s + "}"
		}
		return inner, nil
	}
	return e.alternative(items, expr[start:])
}

func (e *expander) alternative(items []string, alt string) ([]string, error) {
	x, err := e.expandPattern(alt)
	if err != nil {
		return nil, err
	}
	if len(items)+len(x) > e.max {
		return nil, e.tooMany()
	}
	return append(items, x...), nil
}

func (e *expander) tooMany() error {
	return fmt.Errorf("pattern %q: %w (cap %d)", e.pattern, ErrTooManyExpansions, e.max)
}

func (e *expander) product(a, b []string) ([]string, error) {
	if len(b) != 0 && len(a) > e.max/len(b) {
		return nil, e.tooMany()
	}
	out := make([]string, 0, len(a)*len(b))
	for _, x := range a {
		for _, y := range b {
			out = append(out, x+y)
		}
	}
	return out, nil
}

func (e *expander) intRange(left, right, incr string) ([]string, error) {
	start, err1 := strconv.ParseInt(left, 10, 64)
	end, err2 := strconv.ParseInt(right, 10, 64)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("pattern %q: range {%s..%s} out of bounds", e.pattern, left, right)
	}
	step, err := e.step(incr)
	if err != nil {
		return nil, err
	}
	width := 0
	for _, s := range []string{left, right} {
		if s != "0" && s != "-0" && (strings.HasPrefix(s, "0") || strings.HasPrefix(s, "-0")) {
			width = max(len(left), len(right))
		}
	}
	lo, hi := min(start, end), max(start, end)
	span := uint64(hi) - uint64(lo)
	if span/uint64(step) >= uint64(e.max) {
		return nil, e.tooMany()
	}
	n := int(span/uint64(step)) + 1
	out := make([]string, 0, n)
	for i := range n {
		v := start + int64(i)*step
		if start > end {
			v = start - int64(i)*step
		}
		out = append(out, fmt.Sprintf("%0*d", width, v))
	}
	return out, nil
}

func (e *expander) charRange(left, right, incr string) ([]string, error) {
	step, err := e.step(incr)
	if err != nil {
		return nil, err
	}
	step = min(step, int64(len(letters))) // larger steps give the same result
	a, b := strings.Index(letters, left), strings.Index(letters, right)
	var out []string
	if a <= b {
		for i := a; i <= b; i += int(step) {
			out = append(out, letters[i:i+1])
		}
	} else {
		for i := a; i >= b; i -= int(step) {
			out = append(out, letters[i:i+1])
		}
	}
	return out, nil
}

func (e *expander) step(incr string) (int64, error) {
	if incr == "" {
		return 1, nil
	}
	s, err := strconv.ParseInt(incr, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("pattern %q: bad step %q", e.pattern, incr)
	}
	if s == 0 {
		s = 1
	}
	return s, nil
}

func appendAll(out []string, lit string) []string {
	for i := range out {
		out[i] += lit
	}
	return out
}

// unescape drops the backslash of each "\x" pair, as braceexpand does.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
