package npy

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A .npy header is a Python literal, which numpy reads with
// ast.literal_eval (after dropping Python 2's long-integer "L" suffixes
// from version 1.0 and 2.0 headers). This file evaluates the same
// literals the same way: strings with every prefix, quote and escape but
// \N{name}; bytes; integers in every base with underscores, signed;
// floats and complex numbers (only to tell them apart); True, False,
// None, ...; tuples, lists, dicts (a repeated key keeps its last value)
// and sets; implicit string concatenation, comments, line continuations
// and Python's rules for white space, indentation and newlines.

// pyKind is the type of a literal value.
type pyKind int

const (
	pyStr pyKind = iota
	pyBytes
	pyInt
	pyBigInt // an int beyond 64 bits; its value is not kept
	pyFloat
	pyComplex
	pyBool
	pyNone
	pyEllipsis
	pyTuple
	pyList
	pyDict
	pySet
)

func (k pyKind) String() string {
	return [...]string{"a string", "bytes", "an int", "an int beyond 64 bits", "a float", "a complex number",
		"a bool", "None", "Ellipsis", "a tuple", "a list", "a dict", "a set"}[k]
}

// pyValue is a literal value.
type pyValue struct {
	kind  pyKind
	str   string    // pyStr (UTF-8) and pyBytes
	i     int64     // pyInt; pyBool as 0 or 1
	items []pyValue // tuple, list and set elements; dict values
	keys  []pyValue // dict keys, in order, each once
	at    int       // where the value starts in the header text
	end   int       // where it ends
}

// hashable reports whether Python could use v as a dict key or set element.
func (v pyValue) hashable() bool {
	switch v.kind {
	case pyList, pyDict, pySet:
		return false
	case pyTuple:
		for _, it := range v.items {
			if !it.hashable() {
				return false
			}
		}
	}
	return true
}

// literalError is a parse failure at a byte offset of the header text.
type literalError struct {
	at   int
	kind error
	msg  string
}

// maxNesting is Python's tokenizer limit on nested brackets.
const maxNesting = 200

type tokKind int

const (
	tokEnd tokKind = iota
	tokNumber
	tokString
	tokName
	tokOp
	tokNewline // a NEWLINE outside brackets
	tokNL      // a newline inside brackets, or a blank line
	tokComment
)

type token struct {
	kind tokKind
	text string // the token's source text
	at   int
	// Strings: the decoded value and whether it is bytes or an f-string.
	str     string
	bytes   bool
	fstring bool
}

// tokenize splits s as Python's tokenizer does (with "\r\n" and "\r"
// already turned into "\n").
func tokenize(s string) ([]token, *literalError) {
	var toks []token
	depth := 0
	lineStart := true
	lineTokens := false // the logical line has a token besides comments
	i := 0
	fail := func(at int, format string, args ...any) ([]token, *literalError) {
		return nil, &literalError{at, ErrHeaderSyntax, fmt.Sprintf(format, args...)}
	}
	for i < len(s) {
		if lineStart && depth == 0 {
			// Indentation of a logical line: none is allowed.
			j := i
			for j < len(s) && (s[j] == ' ' || s[j] == '\t' || s[j] == '\f') {
				j++
			}
			blank := j == len(s) || s[j] == '\n' || s[j] == '#' || s[j] == '\\' && j+1 < len(s) && s[j+1] == '\n'
			indent := strings.TrimLeft(s[i:j], "\f") != ""
			if k := strings.LastIndexByte(s[i:j], '\f'); k >= 0 {
				indent = s[i+k+1:j] != "" // a form feed resets the column
			}
			if indent && !blank {
				return fail(i, "unexpected indent")
			}
			i = j
			lineStart = false
			if i >= len(s) {
				break
			}
		}
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\f':
			i++
		case c == '\n':
			if depth > 0 || !lineTokens {
				toks = append(toks, token{kind: tokNL, at: i})
			} else {
				toks = append(toks, token{kind: tokNewline, at: i})
				lineTokens = false
			}
			i++
			lineStart = depth == 0
		case c == '#':
			j := strings.IndexByte(s[i:], '\n')
			if j < 0 {
				j = len(s) - i
			}
			toks = append(toks, token{kind: tokComment, text: s[i : i+j], at: i})
			i += j
		case c == '\\':
			if i+1 < len(s) && s[i+1] == '\n' {
				i += 2 // line continuation
				if i >= len(s) {
					return fail(i, "unexpected end of header after a line continuation")
				}
				continue
			}
			return fail(i, "unexpected character after line continuation character")
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			n := scanNumber(s, i)
			if n == i {
				return fail(i, "invalid number")
			}
			toks = append(toks, token{kind: tokNumber, text: s[i:n], at: i})
			i = n
		case c == '\'' || c == '"' || isIdentStart(s, i):
			j := i
			for j < len(s) && isIdentChar(s, j) {
				_, size := utf8.DecodeRuneInString(s[j:])
				j += size
			}
			if j < len(s) && (s[j] == '\'' || s[j] == '"') && validPrefix(s[i:j]) {
				t, n, err := scanString(s, i, j)
				if err != nil {
					return nil, err
				}
				toks = append(toks, t)
				i = n
				continue
			}
			if j == i {
				return fail(i, "invalid character %q", s[i:i+1])
			}
			toks = append(toks, token{kind: tokName, text: s[i:j], at: i})
			i = j
		case c == '.' && strings.HasPrefix(s[i:], "..."):
			toks = append(toks, token{kind: tokOp, text: "...", at: i})
			i += 3
		case strings.IndexByte("([{", c) >= 0:
			if depth++; depth > maxNesting {
				return fail(i, "more than %d nested brackets", maxNesting)
			}
			toks = append(toks, token{kind: tokOp, text: s[i : i+1], at: i})
			i++
		case strings.IndexByte(")]}", c) >= 0:
			if depth == 0 {
				return fail(i, "unmatched %q", c)
			}
			depth--
			toks = append(toks, token{kind: tokOp, text: s[i : i+1], at: i})
			i++
		case c < utf8.RuneSelf && strings.IndexByte(",:+-*/%@&|^~<>=!.;", c) >= 0:
			// Operators the parser refuses (but for , : + -) still make
			// tokens, as Python's do, so errors say where.
			n := i + 1
			if n < len(s) && strings.IndexByte("*/=<>", s[n]) >= 0 {
				n++
			}
			toks = append(toks, token{kind: tokOp, text: s[i:n], at: i})
			i = n
		default:
			r, _ := utf8.DecodeRuneInString(s[i:])
			return fail(i, "invalid character %q in the header", r)
		}
		if n := len(toks); n > 0 && toks[n-1].kind != tokComment && toks[n-1].kind != tokNL && toks[n-1].kind != tokNewline {
			lineTokens = true
		}
	}
	if depth > 0 {
		return fail(len(s), "unexpected end of header inside brackets")
	}
	return append(toks, token{kind: tokEnd, at: len(s)}), nil
}

func isIdentStart(s string, i int) bool {
	c := s[i]
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= utf8.RuneSelf && isLetterRune(s[i:])
}

func isIdentChar(s string, i int) bool {
	return isIdentStart(s, i) || s[i] >= '0' && s[i] <= '9'
}

// isLetterRune accepts non-ASCII identifier characters loosely: any such
// name is refused by the parser anyway; this only decides where it ends.
func isLetterRune(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return r != utf8.RuneError && r > 0xa0 && r != 0x2028 && r != 0x2029 && r != 0x3000 && r != 0xfeff
}

// validPrefix reports whether p is a string prefix Python accepts.
func validPrefix(p string) bool {
	switch strings.ToLower(p) {
	case "", "r", "u", "b", "br", "rb", "f", "fr", "rf":
		return true
	}
	return false
}

// scanNumber returns the end of the number at s[i:], following the regular
// expressions of Python's tokenize module (which is what numpy runs over
// version 1.0 and 2.0 headers): imaginary, then float, then int.
func scanNumber(s string, i int) int {
	digits := func(k int, ok func(byte) bool) int { // d(_?d)*
		if k >= len(s) || !ok(s[k]) {
			return k
		}
		k++
		for k < len(s) {
			if ok(s[k]) {
				k++
			} else if s[k] == '_' && k+1 < len(s) && ok(s[k+1]) {
				k += 2
			} else {
				break
			}
		}
		return k
	}
	dec := func(c byte) bool { return c >= '0' && c <= '9' }
	if i+1 < len(s) && s[i] == '0' {
		var ok func(byte) bool
		switch s[i+1] {
		case 'x', 'X':
			ok = func(c byte) bool { return dec(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }
		case 'o', 'O':
			ok = func(c byte) bool { return c >= '0' && c <= '7' }
		case 'b', 'B':
			ok = func(c byte) bool { return c == '0' || c == '1' }
		}
		if ok != nil {
			k := i + 2
			if k < len(s) && s[k] == '_' {
				k++
			}
			if e := digits(k, ok); e > k {
				return e
			}
			return i + 1 // "0" then a name
		}
	}
	exponent := func(k int) int {
		if k < len(s) && (s[k] == 'e' || s[k] == 'E') {
			m := k + 1
			if m < len(s) && (s[m] == '+' || s[m] == '-') {
				m++
			}
			if e := digits(m, dec); e > m {
				return e
			}
		}
		return k
	}
	imag := func(k int) int {
		if k < len(s) && (s[k] == 'j' || s[k] == 'J') {
			return k + 1
		}
		return k
	}
	k := digits(i, dec)
	if k < len(s) && s[k] == '.' {
		f := digits(k+1, dec)
		if k == i && f == k+1 {
			return i
		}
		return imag(exponent(f))
	}
	if e := exponent(k); e > k {
		return imag(e)
	}
	if j := imag(k); j > k {
		return j
	}
	// An int: "0" (and more zeros) or a digit that is not 0 first.
	if s[i] == '0' {
		z := i + 1
		for z < len(s) && (s[z] == '0' || s[z] == '_' && z+1 < len(s) && s[z+1] == '0') {
			z++
		}
		return z
	}
	return k
}

// numberValue evaluates a number token.
func numberValue(t token) (pyValue, *literalError) {
	text := strings.ReplaceAll(t.text, "_", "")
	v := pyValue{at: t.at, end: t.at + len(t.text)}
	lower := strings.ToLower(text)
	switch {
	case strings.HasSuffix(lower, "j"):
		v.kind = pyComplex
	case strings.HasPrefix(lower, "0x"), strings.HasPrefix(lower, "0o"), strings.HasPrefix(lower, "0b"):
		v.kind = pyInt
	case strings.ContainsAny(lower, ".e"):
		v.kind = pyFloat
	default:
		v.kind = pyInt
	}
	if v.kind != pyInt {
		return v, nil
	}
	n, ok := new(big.Int).SetString(text, 0)
	if !ok {
		return v, &literalError{t.at, ErrHeaderSyntax, fmt.Sprintf("invalid integer %q", t.text)}
	}
	if !n.IsInt64() {
		v.kind = pyBigInt
		return v, nil
	}
	v.i = n.Int64()
	return v, nil
}

// scanString scans the string literal whose prefix is s[i:q] and whose
// opening quote is at q, and decodes it.
func scanString(s string, i, q int) (token, int, *literalError) {
	prefix := strings.ToLower(s[i:q])
	raw := strings.Contains(prefix, "r")
	t := token{kind: tokString, at: i, bytes: strings.Contains(prefix, "b"), fstring: strings.Contains(prefix, "f")}
	quote := s[q : q+1]
	if strings.HasPrefix(s[q:], strings.Repeat(quote, 3)) {
		quote = strings.Repeat(quote, 3)
	}
	start := q + len(quote)
	j := start
	for {
		if j >= len(s) {
			return t, 0, &literalError{i, ErrHeaderSyntax, "unterminated string"}
		}
		if strings.HasPrefix(s[j:], quote) {
			break
		}
		switch s[j] {
		case '\\':
			j += 2
			continue
		case '\n':
			if len(quote) == 1 {
				return t, 0, &literalError{i, ErrHeaderSyntax, "unterminated string (a line break in it)"}
			}
		}
		j++
	}
	if j > len(s) {
		return t, 0, &literalError{i, ErrHeaderSyntax, "unterminated string"}
	}
	body := s[start:j]
	t.text = s[i : j+len(quote)]
	if t.bytes {
		for k := 0; k < len(body); k++ {
			if body[k] >= utf8.RuneSelf {
				return t, 0, &literalError{i, ErrHeaderSyntax, "bytes can only contain ASCII literal characters"}
			}
		}
	}
	if raw {
		t.str = body
		return t, j + len(quote), nil
	}
	str, err := unescape(body, t.bytes)
	if err != nil {
		return t, 0, &literalError{i, ErrHeaderSyntax, err.Error()}
	}
	t.str = str
	return t, j + len(quote), nil
}

// unescape decodes the escapes of a string (or bytes) literal's body.
func unescape(body string, isBytes bool) (string, error) {
	if !strings.Contains(body, `\`) {
		return body, nil
	}
	var b strings.Builder
	for k := 0; k < len(body); k++ {
		c := body[k]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		k++
		e := body[k]
		switch e {
		case '\n':
		case '\\', '\'', '"':
			b.WriteByte(e)
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case '0', '1', '2', '3', '4', '5', '6', '7':
			n := 0
			m := k
			for m < len(body) && m < k+3 && body[m] >= '0' && body[m] <= '7' {
				n = n*8 + int(body[m]-'0')
				m++
			}
			k = m - 1
			if isBytes {
				b.WriteByte(byte(n))
			} else {
				b.WriteRune(rune(n))
			}
		case 'x', 'u', 'U':
			digits := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			if isBytes && e != 'x' {
				b.WriteByte('\\')
				b.WriteByte(e)
				continue
			}
			if k+1+digits > len(body) {
				return "", fmt.Errorf(`truncated \%c escape`, e)
			}
			n, err := strconv.ParseUint(body[k+1:k+1+digits], 16, 32)
			if err != nil {
				return "", fmt.Errorf(`malformed \%c escape`, e)
			}
			k += digits
			switch {
			case isBytes:
				b.WriteByte(byte(n))
			case n > utf8.MaxRune:
				return "", fmt.Errorf(`\U escape beyond U+10FFFF`)
			default:
				b.WriteRune(rune(n))
			}
		case 'N':
			if isBytes {
				b.WriteString(`\N`)
				continue
			}
			return "", fmt.Errorf(`\N{name} escapes are not supported (gdsload has no Unicode name table): write the character or a \u escape`)
		default:
			b.WriteByte('\\') // Python keeps unknown escapes as they are
			b.WriteByte(e)
		}
	}
	return b.String(), nil
}

// parser evaluates a token stream.
type parser struct {
	toks []token
	pos  int
}

// node kinds matter to ast.literal_eval: a sign applies to a number
// constant only, and + or - only to a real and an imaginary number.
type nodeKind int

const (
	nodeConst nodeKind = iota
	nodeSigned
	nodeBinOp
	nodeOther
)

// evalLiteral evaluates text as ast.literal_eval does; py2 drops an "L"
// name right after a number, as numpy's _filter_header does for version
// 1.0 and 2.0 headers.
func evalLiteral(text string, py2 bool) (pyValue, *literalError) {
	if strings.IndexByte(text, 0) >= 0 {
		return pyValue{}, &literalError{strings.IndexByte(text, 0), ErrHeaderSyntax, "NUL character in the header"}
	}
	// literal_eval strips leading blanks; the tokenizer reads "\r\n" and
	// "\r" as "\n". Offsets stay those of text: the strip is counted back,
	// "\r\n" becomes " \n".
	lead := len(text) - len(strings.TrimLeft(text, " \t"))
	norm := strings.ReplaceAll(text[lead:], "\r\n", " \n")
	norm = strings.ReplaceAll(norm, "\r", "\n")
	toks, err := tokenize(norm)
	if err != nil {
		err.at += lead
		return pyValue{}, err
	}
	if py2 {
		kept := toks[:0:0]
		for k, t := range toks {
			if t.kind == tokName && t.text == "L" && k > 0 && toks[k-1].kind == tokNumber {
				continue
			}
			kept = append(kept, t)
		}
		toks = kept
	}
	var cleaned []token
	for _, t := range toks {
		if t.kind == tokComment || t.kind == tokNL {
			continue
		}
		cleaned = append(cleaned, t)
	}
	for k := range cleaned {
		cleaned[k].at += lead
	}
	p := &parser{toks: cleaned}
	v, _, perr := p.testList()
	if perr != nil {
		return pyValue{}, perr
	}
	for p.peek().kind == tokNewline {
		p.pos++
	}
	if t := p.peek(); t.kind != tokEnd {
		return pyValue{}, p.errorf(t, "unexpected %q after the value", t.text)
	}
	return v, nil
}

func (p *parser) peek() token { return p.toks[p.pos] }

func (p *parser) isOp(text string) bool {
	t := p.peek()
	return t.kind == tokOp && t.text == text
}

func (p *parser) errorf(t token, format string, args ...any) *literalError {
	return &literalError{t.at, ErrHeaderSyntax, fmt.Sprintf(format, args...)}
}

// startsExpr reports whether the next token can start an expression.
func (p *parser) startsExpr() bool {
	t := p.peek()
	switch t.kind {
	case tokNumber, tokString, tokName:
		return true
	case tokOp:
		return strings.Contains("([{+-", t.text) || t.text == "..."
	}
	return false
}

// testList parses an expression or a bare tuple of them ("1, 2").
func (p *parser) testList() (pyValue, nodeKind, *literalError) {
	first := p.peek()
	v, kind, err := p.expr()
	if err != nil || !p.isOp(",") {
		return v, kind, err
	}
	items := []pyValue{v}
	for p.isOp(",") {
		p.pos++
		if !p.startsExpr() {
			break
		}
		it, _, err := p.expr()
		if err != nil {
			return pyValue{}, 0, err
		}
		items = append(items, it)
	}
	return pyValue{kind: pyTuple, items: items, at: first.at, end: p.peek().at}, nodeOther, nil
}

// expr parses a sum: a signed real number plus or minus an imaginary one
// is the only one literal_eval allows.
func (p *parser) expr() (pyValue, nodeKind, *literalError) {
	left, kind, err := p.factor()
	if err != nil {
		return pyValue{}, 0, err
	}
	for p.isOp("+") || p.isOp("-") {
		op := p.peek()
		p.pos++
		right, rkind, err := p.factor()
		if err != nil {
			return pyValue{}, 0, err
		}
		if kind == nodeBinOp || kind == nodeOther || (left.kind != pyInt && left.kind != pyBigInt && left.kind != pyFloat) ||
			rkind != nodeConst || right.kind != pyComplex {
			return pyValue{}, 0, p.errorf(op, "operator %q is not allowed here (only a real number plus or minus an imaginary one)", op.text)
		}
		left, kind = pyValue{kind: pyComplex, at: left.at, end: right.end}, nodeBinOp
	}
	if t := p.peek(); t.kind == tokOp && !strings.Contains(",:)]}", t.text) || t.kind == tokName || t.kind == tokNumber || t.kind == tokString {
		return pyValue{}, 0, p.errorf(t, "unexpected %q", t.text)
	}
	return left, kind, nil
}

// factor parses a signed number or an atom.
func (p *parser) factor() (pyValue, nodeKind, *literalError) {
	if p.isOp("+") || p.isOp("-") {
		op := p.peek()
		p.pos++
		v, kind, err := p.factor()
		if err != nil {
			return pyValue{}, 0, err
		}
		if kind != nodeConst || (v.kind != pyInt && v.kind != pyBigInt && v.kind != pyFloat && v.kind != pyComplex) {
			return pyValue{}, 0, p.errorf(op, "a sign applies to a number only")
		}
		if op.text == "-" && v.kind == pyInt {
			v.i = -v.i
		}
		v.at = op.at
		return v, nodeSigned, nil
	}
	return p.atom()
}

// atom parses a constant or a display (tuple, list, dict, set).
func (p *parser) atom() (pyValue, nodeKind, *literalError) {
	t := p.peek()
	switch t.kind {
	case tokNumber:
		p.pos++
		v, err := numberValue(t)
		return v, nodeConst, err
	case tokString:
		return p.strings()
	case tokName:
		p.pos++
		switch t.text {
		case "True", "False":
			v := pyValue{kind: pyBool, at: t.at, end: t.at + len(t.text)}
			if t.text == "True" {
				v.i = 1
			}
			return v, nodeConst, nil
		case "None":
			return pyValue{kind: pyNone, at: t.at, end: t.at + 4}, nodeConst, nil
		case "set":
			if p.isOp("(") && p.toks[p.pos+1].kind == tokOp && p.toks[p.pos+1].text == ")" {
				p.pos += 2
				return pyValue{kind: pySet, at: t.at, end: p.toks[p.pos-1].at + 1}, nodeOther, nil
			}
		}
		return pyValue{}, 0, p.errorf(t, "name %q is not a literal (True, False or None)", t.text)
	case tokOp:
		switch t.text {
		case "...":
			p.pos++
			return pyValue{kind: pyEllipsis, at: t.at, end: t.at + 3}, nodeConst, nil
		case "(":
			p.pos++
			if p.isOp(")") {
				p.pos++
				return pyValue{kind: pyTuple, at: t.at, end: t.at + 2}, nodeOther, nil
			}
			v, kind, err := p.testList()
			if err != nil {
				return pyValue{}, 0, err
			}
			if !p.isOp(")") {
				return pyValue{}, 0, p.errorf(p.peek(), "expected ')'")
			}
			p.pos++
			if v.kind == pyTuple && kind == nodeOther {
				v.at, v.end = t.at, p.toks[p.pos-1].at+1
			}
			return v, kind, nil
		case "[":
			p.pos++
			items, err := p.items("]")
			if err != nil {
				return pyValue{}, 0, err
			}
			return pyValue{kind: pyList, items: items, at: t.at, end: p.toks[p.pos-1].at + 1}, nodeOther, nil
		case "{":
			return p.dictOrSet()
		}
	}
	if t.kind == tokEnd || t.kind == tokNewline {
		return pyValue{}, 0, p.errorf(t, "unexpected end of header")
	}
	return pyValue{}, 0, p.errorf(t, "unexpected %q", t.text)
}

// items parses expressions separated by commas up to closer.
func (p *parser) items(closer string) ([]pyValue, *literalError) {
	var items []pyValue
	for !p.isOp(closer) {
		v, _, err := p.expr()
		if err != nil {
			return nil, err
		}
		items = append(items, v)
		if p.isOp(",") {
			p.pos++
		} else if !p.isOp(closer) {
			return nil, p.errorf(p.peek(), "expected ',' or %q", closer)
		}
	}
	p.pos++
	return items, nil
}

// strings concatenates adjacent string literals.
func (p *parser) strings() (pyValue, nodeKind, *literalError) {
	first := p.peek()
	var b strings.Builder
	fstring := false
	for p.peek().kind == tokString {
		t := p.peek()
		if t.bytes != first.bytes {
			return pyValue{}, 0, p.errorf(t, "cannot mix bytes and nonbytes literals")
		}
		fstring = fstring || t.fstring
		b.WriteString(t.str)
		p.pos++
	}
	if fstring {
		return pyValue{}, 0, p.errorf(first, "f-strings are not literals")
	}
	v := pyValue{kind: pyStr, str: b.String(), at: first.at, end: p.toks[p.pos-1].at + len(p.toks[p.pos-1].text)}
	if first.bytes {
		v.kind = pyBytes
	}
	return v, nodeConst, nil
}

// dictOrSet parses {k: v, ...} or {x, ...}; {} is a dict.
func (p *parser) dictOrSet() (pyValue, nodeKind, *literalError) {
	open := p.peek()
	p.pos++
	v := pyValue{kind: pyDict, at: open.at}
	if p.isOp("}") {
		p.pos++
		v.end = open.at + 2
		return v, nodeOther, nil
	}
	for first := true; !p.isOp("}"); first = false {
		if p.isOp("**") || p.isOp("*") {
			return pyValue{}, 0, p.errorf(p.peek(), "unpacking is not a literal")
		}
		key, _, err := p.expr()
		if err != nil {
			return pyValue{}, 0, err
		}
		if first && !p.isOp(":") {
			v.kind = pySet
		}
		if v.kind == pySet {
			if !key.hashable() {
				return pyValue{}, 0, &literalError{key.at, ErrHeaderSyntax, fmt.Sprintf("%v cannot be in a set", key.kind)}
			}
			v.items = append(v.items, key)
		} else {
			if !p.isOp(":") {
				return pyValue{}, 0, p.errorf(p.peek(), "expected ':' after a dict key")
			}
			p.pos++
			val, _, err := p.expr()
			if err != nil {
				return pyValue{}, 0, err
			}
			if !key.hashable() {
				return pyValue{}, 0, &literalError{key.at, ErrHeaderSyntax, fmt.Sprintf("%v cannot be a dict key", key.kind)}
			}
			v.setKey(key, val)
		}
		if p.isOp(",") {
			p.pos++
		} else if !p.isOp("}") {
			return pyValue{}, 0, p.errorf(p.peek(), "expected ',' or '}'")
		}
	}
	p.pos++
	v.end = p.toks[p.pos-1].at + 1
	return v, nodeOther, nil
}

// setKey stores val under key in dict v: a string key given again keeps
// its place and takes the new value, as in Python. Other keys are kept as
// they come (the header accepts none).
func (v *pyValue) setKey(key, val pyValue) {
	if key.kind == pyStr {
		for k, old := range v.keys {
			if old.kind == pyStr && old.str == key.str {
				v.items[k] = val
				return
			}
		}
	}
	v.keys = append(v.keys, key)
	v.items = append(v.items, val)
}
