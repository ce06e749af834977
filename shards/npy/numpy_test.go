package npy

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/gdsload/gdsload/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// debianPython is the system interpreter that has python3-numpy; the python3
// first on PATH may be another one without numpy.
const debianPython = "/usr/bin/python3"

// needNumpy skips the test when the interpreter or numpy is missing (fails
// it under GDSLOAD_REQUIRE_TOOLS).
func needNumpy(t *testing.T) {
	t.Helper()
	testenv.PythonModules(t, debianPython, "python3-numpy (apt-get install -y python3-numpy)", "numpy")
}

func runPython(t *testing.T, script string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(debianPython, append([]string{"-c", script}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "python: %v\n%s", err, stderr.String())
	return out
}

// numpyWriter writes arrays with numpy in every format version and prints,
// per file, what numpy says is in it: the data bytes in file order.
const numpyWriter = `
import json, os, sys
import numpy as np
from numpy.lib import format as fmt
d = sys.argv[1]
arrays = {
    "f4_2d": np.arange(12, dtype="<f4").reshape(3, 4),
    "i8_be": np.arange(-3, 3, dtype=">i8"),
    "c16": (np.arange(4) + 1j * np.arange(4)).astype("<c16"),
    "bool": np.array([True, False, True, True, False]),
    "scalar": np.array(3.5, dtype="<f8"),
    "empty": np.zeros((0, 3), dtype="<u2"),
    "fortran": np.asfortranarray(np.arange(6, dtype="<f8").reshape(2, 3)),
    "f2": np.linspace(0, 1, 7).astype("<f2"),
    "u1_4d": np.arange(120, dtype="u1").reshape(2, 3, 4, 5),
    "i1": np.array([-128, 0, 127], dtype="i1"),
}
out = []
for name, a in arrays.items():
    for v in [None, (1, 0), (2, 0), (3, 0)]:
        fn = "%s_v%s.npy" % (name, "auto" if v is None else v[0])
        with open(os.path.join(d, fn), "wb") as f:
            if v is None:
                np.save(f, a)
            else:
                fmt.write_array(f, a, version=v)
        hd = fmt.header_data_from_array_1_0(a)
        data = a.tobytes(order="F" if hd["fortran_order"] else "C")
        out.append({"file": fn, "version": list(v or (1, 0)), "descr": hd["descr"],
                    "fortran": hd["fortran_order"], "shape": list(hd["shape"]), "data": data.hex()})
# Header lengths in every residue modulo 64, to pin numpy's padding rules
# (a full 64 bytes of padding when already aligned, room for the growth axis).
for k in range(3, 25):
    for descr in ("|u1", "<c16"):
        for fortran in (False, True):
            for mid in (1, 10):
                shape = (10, mid) + (1,) * (k - 3) + (3,)
                a = np.arange(30 * mid).astype(descr).reshape(shape, order="F" if fortran else "C")
                fn = "sweep_%d_%s_%d_%d.npy" % (k, descr[1:], fortran, mid)
                np.save(os.path.join(d, fn), a)
                hd = fmt.header_data_from_array_1_0(a)
                out.append({"file": fn, "version": [1, 0], "descr": hd["descr"], "fortran": hd["fortran_order"],
                            "shape": list(a.shape), "data": a.tobytes(order="F" if fortran else "C").hex()})
np.save(os.path.join(d, "object.npy"), np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
np.save(os.path.join(d, "structured.npy"), np.zeros(2, dtype=[("a", "<i4"), ("b", "<f8", (2,))]))
np.save(os.path.join(d, "unicode.npy"), np.array(["ab", "c"]))
json.dump(out, sys.stdout)
`

// TestReadsFilesNumpyWrites parses .npy files of versions 1.0, 2.0 and 3.0
// written by numpy, checks every header field and the data's position, and
// that Encode writes the same bytes numpy did.
func TestReadsFilesNumpyWrites(t *testing.T) {
	needNumpy(t)
	dir := t.TempDir()
	var cases []struct {
		File    string
		Version [2]byte
		Descr   string
		Fortran bool
		Shape   []int64
		Data    string
	}
	require.NoError(t, json.Unmarshal(runPython(t, numpyWriter, dir), &cases))
	require.Len(t, cases, 40+176, "numpy wrote %d files, want 216", len(cases))
	for _, c := range cases {
		path := filepath.Join(dir, c.File)
		h, err := ParseFile(path)
		if !assert.NoError(t, err, "%s", c.File) {
			continue
		}
		if assert.Equal(t, c.Version, h.Version, "%s: got v%v %q %v %v, numpy says v%v %q %v %v", c.File, h.Version, h.Descr, h.FortranOrder, h.Shape, c.Version, c.Descr, c.Fortran, c.Shape) {
			if assert.Equal(t, c.Descr, h.Descr, "%s: got v%v %q %v %v, numpy says v%v %q %v %v", c.File, h.Version, h.Descr, h.FortranOrder, h.Shape, c.Version, c.Descr, c.Fortran, c.Shape) {
				if assert.Equal(t, c.Fortran, h.FortranOrder, "%s: got v%v %q %v %v, numpy says v%v %q %v %v", c.File, h.Version, h.Descr, h.FortranOrder, h.Shape, c.Version, c.Descr, c.Fortran, c.Shape) {
					assert.True(t, equalShape(h.Shape, c.Shape), "%s: got v%v %q %v %v, numpy says v%v %q %v %v", c.File, h.Version, h.Descr, h.FortranOrder, h.Shape, c.Version, c.Descr, c.Fortran, c.Shape)
				}
			}
		}
		file, _ := os.ReadFile(path)
		got := hex.EncodeToString(file[h.DataOffset:])
		assert.Equal(t, c.Data, got, "%s: data at %d differs from numpy's", c.File, h.DataOffset)
		// Encode writes the very bytes numpy wrote.
		var buf bytes.Buffer
		a := Array{Descr: h.Descr, FortranOrder: h.FortranOrder, Shape: h.Shape, Data: file[h.DataOffset:], Version: h.Version}
		assert.NoError(t, Encode(&buf, a), c.File)
		assert.Equal(t, file, buf.Bytes(), "%s: Encode output differs from numpy's file", c.File)
	}
	_, err := ParseFile(filepath.Join(dir, "object.npy"))
	assert.ErrorIs(t, err, ErrObjectDtype, "object.npy: got %v, want ErrObjectDtype", err)
	for file, want := range map[string]string{"structured.npy": "|V20", "unicode.npy": "<U2"} {
		h, err := ParseFile(filepath.Join(dir, file))
		if assert.NoError(t, err, "%s: got %v, %v; want %s", file, h, err, want) {
			assert.Equal(t, want, h.Dtype.String(), "%s: got %v, %v; want %s", file, h, err, want)
		}
	}
}

// numpyReader loads each file given and prints what numpy sees in it.
const numpyReader = `
import json, sys
import numpy as np
from numpy.lib import format as fmt
out = {}
for fn in sys.argv[1:]:
    with open(fn, "rb") as f:
        version = fmt.read_magic(f)
    a = np.load(fn, allow_pickle=False)
    hd = fmt.header_data_from_array_1_0(a)
    out[fn] = {"version": list(version), "descr": hd["descr"], "fortran": hd["fortran_order"], "shape": list(hd["shape"]),
               "data": a.tobytes(order="F" if hd["fortran_order"] else "C").hex()}
json.dump(out, sys.stdout)
`

// TestNumpyReadsFilesEncodeWrites has numpy load files Encode wrote.
func TestNumpyReadsFilesEncodeWrites(t *testing.T) {
	needNumpy(t)
	dir := t.TempDir()
	arrays := map[string]Array{
		"a.npy": {Descr: "<f4", Shape: []int64{2, 3}, Data: bytes.Repeat([]byte{0, 0, 0x80, 0x3f}, 6)},
		"b.npy": {Descr: ">i2", FortranOrder: true, Shape: []int64{2, 2}, Data: []byte{0, 1, 0, 2, 0, 3, 0, 4}, Version: [2]byte{2, 0}},
		"c.npy": {Descr: "|b1", Shape: []int64{}, Data: []byte{1}, Version: [2]byte{3, 0}},
		"d.npy": {Descr: "<c8", Shape: []int64{0, 7}},
		"e.npy": {Descr: "<u8", Shape: []int64{3}, Data: bytes.Repeat([]byte{0xff}, 24)},
	}
	var paths []string
	for name, a := range arrays {
		var buf bytes.Buffer
		require.NoError(t, Encode(&buf, a))
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, buf.Bytes(), 0o644))
		paths = append(paths, p)
	}
	var got map[string]struct {
		Version [2]byte
		Descr   string
		Fortran bool
		Shape   []int64
		Data    string
	}
	require.NoError(t, json.Unmarshal(runPython(t, numpyReader, paths...), &got))
	for name, a := range arrays {
		g := got[filepath.Join(dir, name)]
		wantVersion := a.Version
		if wantVersion == [2]byte{} {
			wantVersion = [2]byte{1, 0}
		}
		assert.Equal(t, wantVersion, g.Version, "%s: numpy read %+v, wrote %+v", name, g, a)
		assert.Equal(t, a.Descr, g.Descr, "%s: numpy read %+v, wrote %+v", name, g, a)
		assert.Equal(t, a.FortranOrder, g.Fortran, "%s: numpy read %+v, wrote %+v", name, g, a)
		assert.True(t, equalShape(g.Shape, a.Shape), "%s: numpy read %+v, wrote %+v", name, g, a)
		assert.Equal(t, hex.EncodeToString(a.Data), g.Data, "%s: numpy read %+v, wrote %+v", name, g, a)
	}
}
