package npy

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// numpyCorpus writes .npy files with headers spelled every way numpy.load
// might meet them (key orders, quotes, prefixes, escapes, comments, line
// continuations, Python 2 long integers, every dtype name and type code,
// byte orders, datetime units, comma strings, records, subarrays, shapes
// to work out) and reports, per file, what numpy.load makes of it.
const numpyCorpus = `
import itertools, json, os, struct, sys, warnings
import numpy as np
warnings.simplefilter("ignore")
out_dir = sys.argv[1]
cases = []

def add(name, header, ver=1, data=None, ndata=None):
    cases.append((name, header, ver, data, ndata))

def d(descr="'<f4'", order="False", shape="(2, 3)"):
    return "{'descr': %s, 'fortran_order': %s, 'shape': %s, }" % (descr, order, shape)

# The dict itself.
items = {"descr": "'<f4'", "fortran_order": "False", "shape": "(2, 3)"}
for perm in itertools.permutations(items):
    add("order " + "/".join(perm), "{" + ", ".join("'%s': %s" % (k, items[k]) for k in perm) + "}")
for name, text in [
    ("numpy style", d() + "        \n"),
    ("double quotes", '{"descr": "<f4", "fortran_order": False, "shape": (2, 3)}'),
    ("no spaces", "{'descr':'<f4','fortran_order':False,'shape':(2,3)}"),
    ("tabs and newlines", "{\t'descr' :\n'<f4' ,\r\n'fortran_order':False,\r'shape':(2,\n3)\n}\n"),
    ("form feed", "\x0c{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}\x0c"),
    ("vertical tab", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}\x0b"),
    ("no-break space", "{'descr': '<f4',\xa0'fortran_order': False, 'shape': (2, 3)}"),
    ("comment", "{'descr': '<f4', # the dtype\n 'fortran_order': False, 'shape': (2, 3)} # end"),
    ("continuation", "{'descr': '<f4', 'fortran_order': \\\nFalse, 'shape': (2, 3)}"),
    ("continuation outside", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}\\\n"),
    ("leading spaces", "   \t{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}"),
    ("leading newline", "\n\n{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}"),
    ("leading comment line", "# npy\n{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}"),
    ("indented after newline", "\n  {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}"),
    ("trailing newlines", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}\n\n  \n"),
    ("text after", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)} x"),
    ("second line", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}\n1"),
    ("bare tuple", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)},"),
    ("parenthesized", "({'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)})"),
    ("empty", ""),
    ("empty dict", "{}"),
    ("list", "['descr', 'fortran_order', 'shape']"),
    ("NUL", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}\x00"),
    ("u prefix", "{u'descr': u'<f4', U'fortran_order': False, u'shape': (2, 3)}"),
    ("r prefix", "{r'descr': R'<f4', 'fortran_order': False, 'shape': (2, 3)}"),
    ("b key", "{b'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}"),
    ("b descr", "{'descr': b'<f4', 'fortran_order': False, 'shape': (2, 3)}"),
    ("f string", "{f'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}"),
    ("ur prefix", "{ur'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}"),
    ("triple quotes", "{'''descr''': \"\"\"<f4\"\"\", 'fortran_order': False, 'shape': (2, 3)}"),
    ("implicit concatenation", "{'des' \"cr\": '<' 'f4', 'fortran_order': False, 'sha' 'pe': (2, 3)}"),
    ("mixed concatenation", "{'des' b'cr': '<f4', 'fortran_order': False, 'shape': (2, 3)}"),
    ("escapes", "{'d\\x65scr': '\\x3cf\\64', 'fortran_\\u006frder': False, 'sha\\U00000070e': (2, 3)}"),
    ("escaped quote", "{'descr': '<f4', 'fortran_order': False, 'sh\\'ape': (2, 3)}"),
    ("unknown escape", "{'descr': '<f4', 'fortran_order': False, '\\shape': (2, 3)}"),
    ("line break in string", "{'descr': '<f\n4', 'fortran_order': False, 'shape': (2, 3)}"),
    ("escaped line break", "{'descr': '<f\\\n4', 'fortran_order': False, 'shape': (2, 3)}"),
    ("named escape", "{'descr': '\\N{LESS-THAN SIGN}f4', 'fortran_order': False, 'shape': (2, 3)}"),
    ("repeated key, last wins", "{'shape': (9,), 'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}"),
    ("repeated key, last too big", "{'shape': (2, 3), 'descr': '<f4', 'fortran_order': False, 'shape': (9, 9)}"),
    ("extra key", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1}"),
    ("missing key", "{'descr': '<f4', 'shape': (2, 3)}"),
    ("int key", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 1: 2}"),
    ("set", "{'descr', 'fortran_order', 'shape'}"),
    ("unpacking", "{**{'descr': '<f4'}, 'fortran_order': False, 'shape': (2, 3)}"),
    ("deep parens", d(shape="(" * 150 + "(2, 3)" + ")" * 150)),
    ("too deep parens", d(shape="(" * 250 + "(2, 3)" + ")" * 250)),
]:
    add(name, text)
# Values.
for v in ["True", "False", "1", "0", "'False'", "None", "true", "(False)", "not True", "True if 1 else False"]:
    add("fortran_order " + v, d(order=v))
shapes = ["(2, 3)", "(2, 3,)", "((2), (3))", "[2, 3]", "(2L, 3L)", "(2 L, 3L)", "(2l, 3)", "(0x2, 0o3)", "(0b10, 0X3)",
    "(0_2, 3)", "(2_0, 3)", "(+2, 3)", "(-(-2), 3)", "(-(2), 3)", "(- 2, 3)", "(2.0, 3)", "(True, 3)", "(2,) + (3,)", "(2, 3) # c",
    "(-1, 3)", "(2, -1)", "(-2, 3)", "(-1, -1)", "(-1, 0)", "(99999999999999999999,)", "(00, 3)", "(02, 3)", "(2, 3j)",
    "(1+1j, 3)", "((2,), 3)", "(2, 3, 1)", "(1, 1, 2, 1, 3)", "()", "(0,)", "(0, 3)", "(6,)", "(5,)", "(2 ,3)", "2, 3", "(2, None)",
    "(2, ...)", "(9223372036854775807, 0)", "(4294967296, 4294967296, 0)", "(1,) * 33", "(" + "1, " * 33 + "6)",
    "(" + "1, " * 31 + "6)", "(0x_2, 3)", "(2_, 3)", "(2__0, 3)", "(0L, 3)", "(0x2L, 3L)"]
for s in shapes:
    for ver in (1, 3):
        add("shape %s v%d" % (s, ver), d(shape=s), ver=ver)
add("fortran 2-d", d(order="True"))
# Dtypes: every name numpy knows, type codes, kinds and sizes, byte orders.
descrs = sorted(k for k in np.sctypeDict if isinstance(k, str))
descrs += [chr(c) for c in range(33, 127) if chr(c) not in "'\\\\"]
for kind in "biufcSUVMmaO?":
    for size in ["0", "1", "2", "3", "4", "8", "10", "16", "32", "08", "+8", " 8", "-0", "8 "]:
        descrs.append(kind + size)
for order in "<>=|":
    for base in ["f4", "f8", "i1", "u2", "c16", "b1", "?", "S3", "U2", "V5", "M8[ns]", "m8", "O", "float32", "f", "i", "e", "g",
                 "datetime64[s]", "a4", "c", "U"]:
        descrs.append(order + base)
descrs += ["M8[%s]" % u for u in ["Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps", "fs", "as", "generic", "25s", " 25s",
           "0s", "-1s", "+2D", "2M", "s/1000", "D/24", "W/7", "M/2", "Y/12", "ms/3", "h/7", "fs/1000", "as/2", "x", "", "s]", "[s]"]]
descrs += ["m8[ns]", "timedelta64[D]", "datetime64", "datetime64[ns]", "<datetime64[ns]", "M8[ns]x", "m8 ", "M", "m"]
descrs += ["i4,f8", "i4, f8", "f4 , u1", "(2,)f4,u1", "2f4", "1f4", "(1,)f4", "0f4", "()f4", "(2)f4", "(2,3)f4", ">(2,)f4",
           "(2,)>f4", "<(2,)>f4", "f4,", ",f4", "f4,(2,3)", "i4,M8[s]", "2 f4", " 2f4", "<i4,>i4", "=f4,<f4", "i4, f8, ",
           "3u1,u2", "f4,float32", "S3,U2", "O,i4", "", "<", "<<f4", "!f4", "f4 ", " f4", "<float32", "float32 "]
for x in descrs:
    add("descr %r" % x, d(descr=repr(x), shape="(2,)"))
# Records and tuples, as numpy writes them and otherwise.
for dt in [np.dtype([("a", "<i4"), ("b", "<f8", (2,))]),
           np.dtype({"names": ["a", "b"], "formats": ["u1", "<i8"], "offsets": [0, 8], "itemsize": 24}),
           np.dtype([(("title", "a"), "<i2"), ("b", [("c", ">f4", (2, 3)), ("d", "S3")])]),
           np.dtype([("é", "<u2"), ("x", "<M8[ms]")]),
           np.dtype([("a", "<U3"), ("b", "|b1"), ("c", "<c8", (1,))])]:
    for ver in (1, 3):
        add("record %r v%d" % (dt.descr, ver), d(descr=repr(dt.descr), shape="(2,)"), ver=ver)
for x in ["[('a', '<i4'), ('a', '<f8')]", "[('', '<i4')]", "[('', '|V4')]", "[('', '<f4', (2,))]", "[('', [('x', '<i4')])]",
          "[(('t', 'a'), '<i4'), ('t', '<i4')]", "[((1, 'a'), '<i4')]", "[(('t', 'a', 'x'), '<i4')]", "[('a', ('<i4', (2,)))]",
          "[('a', [('b', '<i4')])]", "{'ab': 1}", "[{'ab': 1}]", "['ab']", "['abc']", "[['a', '<i4']]", "[]", "[('a',)]",
          "[('a', '<i4', (2,), 1)]", "[('a', '<i4', -1)]", "[('a', '<i4', 0)]", "[('a', '<i4', 1)]", "[('a', '<i4', ())]",
          "[('a', '<i4', (1,))]", "[('a', '<i4', 2)]", "[('a', '<i4', [2])]", "[('a', '<i4', True)]", "[(1, '<i4')]",
          "[('a', 'O')]", "[('a', [('b', 'O')])]", "[('a', '<i4'), ('b', 'x')]", "('<f4', 1)", "('<f4', ())", "('<f4', (1,))",
          "('<f4', (2,))", "('<f4', (2,), 5)", "('<f4',)", "('<f4', (1, 0))", "('S', 5)", "('U', 3)", "('V', 4)", "('S', 0)",
          "(('<f4', (2,)), (3,))", "('<f4', [1])", "('<f4', None)", "('<f4', 'u1')", "[('a', 'S', 5)]", "[('a', ('S', 5))]",
          "5", "None", "b'<f4'", "[('a', '<i4')] * 2", "[('a' , '<i4' ,) , ]", "[('', '<i4'), ('', '<i4')]",
          "[(('a', 'a'), '<i4')]", "[(('', 'a'), '<i4')]", "[(('t', 'a'), '<i4'), (('t', 'b'), '<i4')]",
          "[(('a', 'b'), '<i4'), ('a', '<i4')]", "[((1, 'a'), '<i4'), ((1, 'b'), '<i4')]",
          "[(('', 'a'), '<i4'), (('', 'b'), '<i4')]"]:
    for shape, n in [("(2,)", None), ("(0,)", 0), ("(-1,)", None)]:
        add("descr %s shape %s" % (x, shape), d(descr=x, shape=shape), ndata=n)
# Latin-1 and UTF-8 text.
add("latin-1 name v1", d(descr="[('\xe9', '<i4')]", shape="(2,)"), ver=1)
add("latin-1 name v2", d(descr="[('\xe9', '<i4')]", shape="(2,)"), ver=2)
add("utf-8 name v3", d(descr="[('\xe9', '<i4')]", shape="(2,)"), ver=3)
add("micro sign unit v3", d(descr="'M8[\u03bcs]'", shape="(2,)"), ver=3)
add("micro sign latin-1 v1", d(descr="'M8[\xb5s]'", shape="(2,)"), ver=1)
add("non-ASCII bytes v1", d(descr="b'\xe9'", shape="(2,)"), ver=1)

report = []
for i, (name, header, ver, data, ndata) in enumerate(cases):
    raw = header.encode("latin-1" if ver < 3 else "utf-8")
    try:
        it = eval(header.split("'descr': ", 1)[1].split(", 'fortran_order'")[0]) if "'descr': " in header else "<f4"
        dt = np.lib.format.descr_to_dtype(it)
        size = dt.itemsize
    except Exception:
        size = 4
    try:
        shp = eval(header.rsplit("'shape': ", 1)[1].rsplit(", }", 1)[0]) if "'shape': " in header else (2, 3)
        n = 1
        for x in shp:
            n *= int(abs(x))
    except Exception:
        n = 6
    if ndata is None:
        ndata = size * n if size * n <= 1 << 16 else 64
    if data is None:
        data = bytes((i * 7 + k) % 251 for k in range(ndata))
    pre = b"\x93NUMPY" + bytes([ver, 0]) + (struct.pack("<H", len(raw)) if ver == 1 else struct.pack("<I", len(raw)))
    fn = "c%04d.npy" % i
    with open(os.path.join(out_dir, fn), "wb") as f:
        f.write(pre + raw + data)
    r = {"file": fn, "name": name}
    try:
        a = np.load(os.path.join(out_dir, fn), allow_pickle=False)
        r.update(ok=True, dtype=a.dtype.str, shape=list(a.shape), data=a.tobytes(order="F" if a.flags.f_contiguous and not a.flags.c_contiguous else "C").hex())
        if a.dtype.names is not None:
            r["fields"] = [[n, a.dtype.fields[n][1], a.dtype.fields[n][0].subdtype[0].str if a.dtype.fields[n][0].subdtype else a.dtype.fields[n][0].str,
                            list(a.dtype.fields[n][0].shape)] for n in a.dtype.names]
    except Exception as e:
        r.update(ok=False, err="%s: %s" % (type(e).__name__, str(e)[:200]))
    report.append(r)
json.dump(report, sys.stdout)
`

// numpyOutcome is what numpy.load made of one corpus file.
type numpyOutcome struct {
	File, Name string
	OK         bool
	Dtype      string
	Shape      []int64
	Data       string
	Fields     [][]any
	Err        string
}

// Where gdsload knowingly differs from numpy.load, refusing what numpy
// loads: \N{name} escapes (no Unicode name table), and (base, new) union
// dtypes, here reached by a three-letter field "abc" read as name "a",
// dtype "b" and a "shape" "c" that numpy takes for a second dtype.
var numpyExceptions = map[string]bool{
	"named escape":              true,
	"descr ['abc'] shape (2,)":  true,
	"descr ['abc'] shape (0,)":  true,
	"descr ['abc'] shape (-1,)": true,
}

// TestHeadersNumpyLoads: every header in the corpus that numpy.load
// accepts, ParseHeader accepts with the dtype, shape and data numpy gives;
// object arrays are refused with ErrObjectDtype, as numpy refuses them
// without allow_pickle; what numpy refuses, ParseHeader refuses (Python
// 2 shapes such as (3L, 4L) and valid spellings were once refused).
func TestHeadersNumpyLoads(t *testing.T) {
	needNumpy(t)
	dir := t.TempDir()
	var outcomes []numpyOutcome
	require.NoError(t, json.Unmarshal(runPython(t, numpyCorpus, dir), &outcomes))
	require.GreaterOrEqual(t, len(outcomes), 880, "the corpus has %d files; want them all", len(outcomes))
	var accepted, refused int
	for _, o := range outcomes {
		file, err := os.ReadFile(filepath.Join(dir, o.File))
		require.NoError(t, err)
		h, err := parseBytes(file)
		switch {
		case numpyExceptions[o.Name]:
			assert.Error(t, err, "%s: accepted; listed as a known difference", o.Name)
		case o.OK:
			accepted++
			if !assert.NoError(t, err, "%s (%s): numpy loads it as %s%v, ParseHeader", o.Name, o.File, o.Dtype, o.Shape) {
				continue
			}
			got := file[h.DataOffset : h.DataOffset+h.DataLen]
			if assert.Equal(t, o.Dtype, h.Dtype.String(), "%s (%s): numpy %s%v, ParseHeader %s%v (data equal: %v)", o.Name, o.File, o.Dtype, o.Shape, h.Dtype, h.Shape, hex.EncodeToString(got) == o.Data) {
				if assert.True(t, slices.Equal(h.Shape, o.Shape), "%s (%s): numpy %s%v, ParseHeader %s%v (data equal: %v)", o.Name, o.File, o.Dtype, o.Shape, h.Dtype, h.Shape, hex.EncodeToString(got) == o.Data) {
					assert.Equal(t, o.Data, hex.EncodeToString(got), "%s (%s): numpy %s%v, ParseHeader %s%v (data equal: %v)", o.Name, o.File, o.Dtype, o.Shape, h.Dtype, h.Shape, hex.EncodeToString(got) == o.Data)
				}
			}
			if o.Fields != nil {
				var fields [][]any
				for _, f := range h.Dtype.Fields {
					shape := []any{}
					for _, n := range f.Shape {
						shape = append(shape, float64(n))
					}
					fields = append(fields, []any{f.Name, float64(f.Offset), f.Dtype.String(), shape})
				}
				assert.Equal(t, fmt.Sprint(o.Fields), fmt.Sprint(fields), "%s: numpy's fields %v, ParseHeader's %v", o.Name, o.Fields, fields)
			}
		case bytes.Contains([]byte(o.Err), []byte("Object arrays cannot be loaded")):
			refused++
			assert.ErrorIs(t, err, ErrObjectDtype, "%s: numpy refuses an object array, ParseHeader", o.Name)
		default:
			refused++
			assert.Error(t, err, "%s (%s): numpy refuses it (%s), ParseHeader accepts %+v", o.Name, o.File, o.Err, h)
		}
	}
	t.Logf("%d headers numpy loads, %d it refuses", accepted, refused)
}
