package webdataset

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gdsload/gdsload/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var nameCases = []string{
	"s-000.tar",
	"s-\xff01.tar",           // a Latin-1 byte
	"d\xff\xfe/f\xe9.bin",    // Latin-1 bytes in a directory and a file name
	"caf\u00e9.tar",          // valid UTF-8 stays as it is
	"\ufffd.tar",             // a real U+FFFD is not an escaped byte
	"\xed\xb2\x80.tar",       // UTF-8 of a surrogate is not valid UTF-8
	"q\"b\\s\n\t\x01<&>.tar", // what encoding/json escapes
	"\u2028\u2029.tar",
	"\xf0\x9f\x98\x80\xf0\x9f.tar", // a whole and a cut four-byte sequence
	"",
}

func TestNameJSONRoundTrip(t *testing.T) {
	for _, name := range nameCases {
		enc := appendNameJSON(nil, name)
		assert.True(t, json.Valid(enc), "%q encodes as %s: not valid UTF-8 JSON", name, enc)
		assert.True(t, utf8.Valid(enc), "%q encodes as %s: not valid UTF-8 JSON", name, enc)
		if utf8.ValidString(name) {
			// UTF-8 names are written as encoding/json writes them, so
			// manifests of such names are unchanged.
			std, _ := json.Marshal(name)
			assert.True(t, bytes.Equal(enc, std), "%q encodes as %s, encoding/json as %s", name, enc, std)
		} else {
			assert.Contains(t, string(enc), `\udc`, "%q encodes as %s, without a \\udcXX escape", name, enc)
		}
		back, err := decodeNameJSON(enc)
		assert.NoError(t, err, "%q -> %s -> %q, %v", name, enc, back, err)
		assert.Equal(t, name, back, "%q -> %s -> %q, %v", name, enc, back, err)
	}
	// Strings other JSON writers produce decode as encoding/json decodes
	// them, except lone surrogates: escaped bytes, or refused.
	for _, tt := range []struct {
		in, want string
		ok       bool
	}{
		{`"a\/b"`, "a/b", true},
		{`"\u00e9\ud83d\ude00"`, "é😀", true},
		{`"\udcff\udc80"`, "\xff\x80", true},
		{`"\ud83d"`, "", false},
		{`"\udc7f"`, "", false},
		{`"\ud83d\u0041"`, "", false},
		{`"x"`, "x", true},
		{"\"raw \xff byte\"", "raw \xff byte", true},
	} {
		got, err := decodeNameJSON([]byte(tt.in))
		assert.Equal(t, tt.ok, (err == nil), "decode %s = %q, %v; want %q (ok=%v)", tt.in, got, err, tt.want, tt.ok)
		assert.Equal(t, tt.want, got, "decode %s = %q, %v; want %q (ok=%v)", tt.in, got, err, tt.want, tt.ok)
	}
}

func FuzzNameJSON(f *testing.F) {
	for _, n := range nameCases {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, name string) {
		enc := appendNameJSON(nil, name)
		require.True(t, json.Valid(enc), "%q encodes as invalid JSON %s", name, enc)
		back, err := decodeNameJSON(enc)
		require.NoError(t, err, "%q -> %s -> %q, %v", name, enc, back, err)
		require.EqualValues(t, name, back, "%q -> %s -> %q, %v", name, enc, back, err)
		// Decoding arbitrary JSON strings never panics, and agrees with
		// encoding/json wherever no surrogate escape is involved.
		raw, _ := json.Marshal(name)
		got, err := decodeNameJSON(raw)
		require.False(t, err == nil && utf8.ValidString(name) && got != name, "decode %s = %q, want %q", raw, got, name)
	})
}

// TestNonUTF8ShardNames: a shard whose file name is not UTF-8 keeps its
// exact name through BuildManifest, WriteManifest and ReadManifest (issue
// 16, bug 6: it came back with U+FFFD in it and could not be opened), and
// Python reads the manifest to the same file.
func TestNonUTF8ShardNames(t *testing.T) {
	dir := t.TempDir()
	plain := goTar(t, testMembers(false))
	names := []string{"s-\xff01.tar", "s-caf\u00e9.tar", "s-\xe9t\xe9.tar"}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), plain, 0o644); err != nil {
			t.Skipf("this file system refuses the name %q: %v", n, err)
		}
	}
	ctx := context.Background()
	m, err := BuildManifest(ctx, dir)
	require.NoError(t, err)
	require.NoError(t, WriteManifest(ctx, dir, m))
	raw, err := os.ReadFile(filepath.Join(dir, ManifestName))
	require.NoError(t, err)
	require.True(t, json.Valid(raw), "index.json does not escape the name:\n%s", raw)
	require.True(t, utf8.Valid(raw), "index.json does not escape the name:\n%s", raw)
	require.True(t, bytes.Contains(raw, []byte(`"s-\udcff01.tar"`)), "index.json does not escape the name:\n%s", raw)
	require.False(t, bytes.Contains(raw, []byte("\ufffd")), "index.json does not escape the name:\n%s", raw)
	back, err := ReadManifest(dir)
	require.NoError(t, err)
	var got []string
	for _, e := range back.Shards {
		got = append(got, e.Name)
		assert.NoError(t, VerifyShard(filepath.Join(dir, e.Name), e), "shard %q", e.Name)
	}
	slices.Sort(names)
	assert.True(t, slices.Equal(got, names), "names read back %q, want %q", got, names)
	// Python's json and os.fsencode (PEP 383) find the same files.
	py := testenv.Tool(t, "python3", "python3")
	out, err := exec.Command(py, "-c", `
import json, os, sys
d = sys.argv[1]
for s in json.load(open(os.path.join(d, "index.json")))["shards"]:
    p = os.path.join(os.fsencode(d), os.fsencode(s["name"]))
    print(os.path.getsize(p) == s["bytes"])
`, dir).CombinedOutput()
	assert.NoError(t, err, "python does not find the shards from index.json: %v\n%s", err, out)
	assert.Equal(t, len(names), strings.Count(string(out), "True"), "python does not find the shards from index.json: %v\n%s", err, out)
}
