package webdataset

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/gdsload/gdsload/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fixtureDir locates the WebDataset project's own shards, shipped in the
// repository's testdata/webdataset with their licence. A missing fixture
// fails the test that reads it: it is part of the repository.
func fixtureDir(t *testing.T) string {
	t.Helper()
	return filepath.Join("..", "..", "testdata", "webdataset")
}

// fixturePaths lists the shipped WebDataset shards matching glob, and
// fails when there are none.
func fixturePaths(t *testing.T, glob string) []string {
	t.Helper()
	ps, err := filepath.Glob(filepath.Join(fixtureDir(t), glob))
	require.NoError(t, err, "no WebDataset fixtures %s in %s (%v): they ship in testdata/webdataset", glob, fixtureDir(t), err)
	require.NotEqualValues(t, 0, len(ps), "no WebDataset fixtures %s in %s (%v): they ship in testdata/webdataset", glob, fixtureDir(t), err)
	return ps
}

// webdatasetGrouping runs WebDataset's grouping rules (tar_file_iterator's
// skips and group_by_keys with base_plus_ext, as in webdataset/tariterators.py)
// in Python over a shard and returns [key, [ext...]] per sample.
const webdatasetGrouping = `
import json, re, sys, tarfile
def base_plus_ext(path):
    m = re.match(r"^((?:.*/|)[^.]+)[.]([^/]*)$", path)
    return (None, None) if not m else (m.group(1), m.group(2))
out, cur = [], None
with tarfile.open(sys.argv[1], mode="r|*") as stream:
    for ti in stream:
        f = ti.name
        if not ti.isreg() or f is None:
            continue
        if "/" not in f and f.startswith("__") and f.endswith("__"):
            continue
        if re.match(r"__[^/]*__($|/)", f):
            continue
        prefix, suffix = base_plus_ext(f)
        if prefix is None:
            continue
        suffix = suffix.lower()
        if cur is None or prefix != cur[0]:
            cur = [prefix, []]
            out.append(cur)
        if suffix in cur[1]:
            raise ValueError("duplicate " + f)
        cur[1].append(suffix)
json.dump(out, sys.stdout)
`

func TestWebDatasetFixtures(t *testing.T) {
	dir := fixtureDir(t)
	for _, tc := range []struct {
		file           string
		samples        int
		firstKey, exts string
	}{
		{"sample.tgz", 90, "10", "cls png"},
		{"mpdata.tar", 100, "000000", "mp"},
		{"tendata.tar", 100, "000000", "ten"},
		{"compressed.tar", 3, "compressed/0001", "txt.gz"},
		{"testgz.tar", 1000, "71671c5e285c455c892fb565330233ba", "txt.gz"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			p := filepath.Join(dir, tc.file)
			f, err := os.Open(p)
			require.NoError(t, err)
			defer f.Close()
			got, err := readAll(f, Auto, WithName(tc.file))
			require.NoError(t, err)
			require.Len(t, got, tc.samples, "%d samples, want %d", len(got), tc.samples)
			var exts string
			for i, fl := range got[0].Fields {
				if i > 0 {
					exts += " "
				}
				exts += fl.Ext
			}
			assert.Equal(t, tc.firstKey, got[0].Key, "first sample %q with %q, want %q with %q", got[0].Key, exts, tc.firstKey, tc.exts)
			assert.Equal(t, tc.exts, exts, "first sample %q with %q, want %q with %q", got[0].Key, exts, tc.firstKey, tc.exts)
			testenv.Tool(t, "python3", "python3")
			var want [][2]json.RawMessage
			require.NoError(t, json.Unmarshal(run(t, nil, "python3", "-c", webdatasetGrouping, p), &want))
			require.Len(t, want, len(got), "WebDataset's rules give %d samples, reader gives %d", len(want), len(got))
			for i, w := range want {
				var key string
				var wexts []string
				require.NoError(t, json.Unmarshal(w[0], &key))
				require.NoError(t, json.Unmarshal(w[1], &wexts))
				g := got[i]
				require.EqualValues(t, key, g.Key, "sample %d: %q with %d fields, WebDataset gives %q with %v", i, g.Key, len(g.Fields), key, wexts)
				require.Len(t, g.Fields, len(wexts), "sample %d: %q with %d fields, WebDataset gives %q with %v", i, g.Key, len(g.Fields), key, wexts)
				for j, e := range wexts {
					require.EqualValues(t, e, g.Fields[j].Ext, "sample %q field %d: %q, WebDataset gives %q", key, j, g.Fields[j].Ext, e)
				}
			}
		})
	}
}
