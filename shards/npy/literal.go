package npy

import (
	"fmt"
	"math"
	"strings"
)

// pyKind is the type of a value in a header literal.
type pyKind int

const (
	pyStr pyKind = iota
	pyBool
	pyInt
	pyTuple
	pyList
)

func (k pyKind) String() string {
	return [...]string{"a string", "a bool", "an int", "a tuple", "a list"}[k]
}

// pyValue is a value of the Python literal subset .npy headers use.
type pyValue struct {
	kind  pyKind
	str   string
	b     bool
	i     int64
	items []pyValue
}

// pyEntry is one key and value of the header dict, in order.
type pyEntry struct {
	key string
	val pyValue
	at  int // offset of the key in the header text
}

// maxDepth bounds nesting of tuples and lists (structured descrs nest), so
// hostile headers cannot exhaust the stack.
const maxDepth = 32

// literalError is a parse failure at a byte offset of the header text.
type literalError struct {
	at   int
	kind error
	msg  string
}

// parser parses the header dict: strings in single or double quotes
// (without escapes, which numpy never writes), True and False, decimal ints
// with an optional minus, tuples (with Python's rule that "(5)" is an int
// and "(5,)" a tuple) and lists; Python whitespace; trailing commas.
type parser struct {
	s   string
	pos int
}

// parseDict parses the whole header text as a dict literal.
func parseDict(s string) ([]pyEntry, *literalError) {
	p := &parser{s: s}
	p.space()
	if !p.eat('{') {
		return nil, p.errorf("header does not start with '{'")
	}
	var entries []pyEntry
	for {
		p.space()
		if p.eat('}') {
			break
		}
		at := p.pos
		key, err := p.value(0)
		if err != nil {
			return nil, err
		}
		if key.kind != pyStr {
			return nil, &literalError{at, ErrHeaderSyntax, fmt.Sprintf("dict key is %v, want a string", key.kind)}
		}
		p.space()
		if !p.eat(':') {
			return nil, p.errorf("expected ':' after key %q", key.str)
		}
		p.space()
		val, err := p.value(0)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if e.key == key.str {
				return nil, &literalError{at, ErrDuplicateKey, fmt.Sprintf("key %q", key.str)}
			}
		}
		entries = append(entries, pyEntry{key.str, val, at})
		p.space()
		if p.eat('}') {
			break
		}
		if !p.eat(',') {
			return nil, p.errorf("expected ',' or '}' after the value of %q", key.str)
		}
	}
	p.space()
	if p.pos != len(p.s) {
		return nil, p.errorf("unexpected text after the dict")
	}
	return entries, nil
}

func (p *parser) value(depth int) (pyValue, *literalError) {
	if depth > maxDepth {
		return pyValue{}, p.errorf("nesting deeper than %d", maxDepth)
	}
	if p.pos >= len(p.s) {
		return pyValue{}, p.errorf("unexpected end of header")
	}
	switch c := p.s[p.pos]; {
	case c == '\'' || c == '"':
		return p.str()
	case c == '(' || c == '[':
		return p.sequence(depth)
	case c == '-' || (c >= '0' && c <= '9'):
		return p.int()
	case strings.HasPrefix(p.s[p.pos:], "True"):
		p.pos += 4
		return pyValue{kind: pyBool, b: true}, p.wordEnd()
	case strings.HasPrefix(p.s[p.pos:], "False"):
		p.pos += 5
		return pyValue{kind: pyBool}, p.wordEnd()
	}
	return pyValue{}, p.errorf("unexpected %q", p.s[p.pos])
}

// wordEnd fails if an identifier continues past a keyword, as in "Truex".
func (p *parser) wordEnd() *literalError {
	if p.pos < len(p.s) {
		if c := p.s[p.pos]; c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			return p.errorf("unexpected %q after keyword", c)
		}
	}
	return nil
}

func (p *parser) str() (pyValue, *literalError) {
	q := p.s[p.pos]
	start := p.pos + 1
	for i := start; i < len(p.s); i++ {
		switch p.s[i] {
		case q:
			p.pos = i + 1
			return pyValue{kind: pyStr, str: p.s[start:i]}, nil
		case '\\', '\n', '\r':
			p.pos = i
			return pyValue{}, p.errorf("escape or line break in a string")
		}
	}
	return pyValue{}, p.errorf("unterminated string")
}

func (p *parser) int() (pyValue, *literalError) {
	start := p.pos
	neg := p.eat('-')
	digits := p.pos
	var v uint64
	overflow := false
	for p.pos < len(p.s) && p.s[p.pos] >= '0' && p.s[p.pos] <= '9' {
		d := uint64(p.s[p.pos] - '0')
		if v > (math.MaxInt64-d)/10 {
			overflow = true
		}
		v = v*10 + d
		p.pos++
	}
	n := p.pos - digits
	switch {
	case n == 0:
		return pyValue{}, p.errorf("'-' not followed by digits")
	case n > 1 && p.s[digits] == '0':
		return pyValue{}, &literalError{start, ErrHeaderSyntax, "int with a leading zero"}
	case overflow:
		return pyValue{}, &literalError{start, ErrShapeOverflow, fmt.Sprintf("int %s does not fit in 64 bits", p.s[start:p.pos])}
	}
	if err := p.wordEnd(); err != nil {
		return pyValue{}, err
	}
	i := int64(v)
	if neg {
		i = -i
	}
	return pyValue{kind: pyInt, i: i}, nil
}

// sequence parses a tuple or a list; "(x)" without a comma is just x.
func (p *parser) sequence(depth int) (pyValue, *literalError) {
	open := p.s[p.pos]
	closer, kind := byte(')'), pyTuple
	if open == '[' {
		closer, kind = ']', pyList
	}
	p.pos++
	var items []pyValue
	commas := 0
	for {
		p.space()
		if p.eat(closer) {
			break
		}
		v, err := p.value(depth + 1)
		if err != nil {
			return pyValue{}, err
		}
		items = append(items, v)
		p.space()
		if p.eat(closer) {
			break
		}
		if !p.eat(',') {
			return pyValue{}, p.errorf("expected ',' or %q", closer)
		}
		commas++
	}
	if kind == pyTuple && len(items) == 1 && commas == 0 {
		return items[0], nil
	}
	return pyValue{kind: kind, items: items}, nil
}

// space skips Python whitespace.
func (p *parser) space() {
	for p.pos < len(p.s) && strings.IndexByte(" \t\n\r\f\v", p.s[p.pos]) >= 0 {
		p.pos++
	}
}

func (p *parser) eat(c byte) bool {
	if p.pos < len(p.s) && p.s[p.pos] == c {
		p.pos++
		return true
	}
	return false
}

func (p *parser) errorf(format string, args ...any) *literalError {
	return &literalError{p.pos, ErrHeaderSyntax, fmt.Sprintf(format, args...)}
}
