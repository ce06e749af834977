package webdataset

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSplitKey(t *testing.T) {
	for _, tc := range []struct {
		path, key, ext string
		ok             bool
	}{
		{"x.jpg", "x", "jpg", true},
		{"a/b/x.y.z", "a/b/x", "y.z", true},
		{"a.b/c.d", "a.b/c", "d", true},
		{"dir/file", "", "", false},
		{"noext", "", "", false},
		{".hidden", "", "", false},
		{"dir/.hidden.txt", "dir/", "hidden.txt", true}, // [^.]+ swallows "dir/"
		{"a.b/.hidden.txt", "", "", false},              // no dot-free run reaches the dot
		{"/.x", "/", "x", true},                         // run is "/" itself
		{"a//.x", "a//", "x", true},                     // run is the second "/"
		{"x.", "x", "", true},                           // empty extension
		{"compressed/0001.txt.gz", "compressed/0001", "txt.gz", true},
		{"a\nb/c.d", "a\nb/c", "d", true}, // ".*/" cannot cross the newline; p=0 matches
		{"ab/c\n.d", "ab/c\n", "d", true}, // ...but [^.]+ can
	} {
		key, ext, ok := SplitKey(tc.path)
		assert.Equal(t, tc.ok, ok, "SplitKey(%q) = %q, %q, %v; want %q, %q, %v", tc.path, key, ext, ok, tc.key, tc.ext, tc.ok)
		assert.False(t, ok && (key != tc.key || ext != tc.ext), "SplitKey(%q) = %q, %q, %v; want %q, %q, %v", tc.path, key, ext, ok, tc.key, tc.ext, tc.ok)
	}
}

// basePlusExt is WebDataset's own definition, used as the oracle.
var basePlusExt = regexp.MustCompile(`^((?:.*/|)[^.]+)[.]([^/]*)$`)

func FuzzSplitKey(f *testing.F) {
	for _, s := range []string{"x.jpg", "a/b/x.y.z", "dir/.h.t", "a.b/.c", "//.", "a\n/b.c", "./x.y", "../a.b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		key, ext, ok := SplitKey(path)
		m := basePlusExt.FindStringSubmatch(path)
		require.Equal(t, ok, (m != nil), "SplitKey(%q) = %q, %q, %v; regexp gives %q", path, key, ext, ok, m)
		require.False(t, ok && (m[1] != key || m[2] != ext), "SplitKey(%q) = %q, %q, %v; regexp gives %q", path, key, ext, ok, m)
	})
}

func TestIsMeta(t *testing.T) {
	for name, want := range map[string]bool{
		"__key__":           true,
		"___":               true, // top level, starts and ends with "__"
		"__meta__/x.json":   true,
		"__a/b__":           false,
		"x/__meta__.json":   false,
		"__meta__.json":     false,
		"__x__y__/z.txt":    true,
		"_single_.txt":      false,
		"__dir__/sub/x.txt": true,
	} {
		got := isMeta(name)
		assert.Equal(t, want, got, "isMeta(%q) = %v, want %v", name, got, want)
	}
}

func TestIsMetaMatchesRegexp(t *testing.T) {
	skipMeta := regexp.MustCompile(`^__[^/]*__($|/)`)
	for _, name := range []string{"__a__", "__a__/b", "__a/b__", "____", "___", "__", "__a__b", "x__a__", "__a__.txt", "__/__/x"} {
		top := !regexp.MustCompile(`/`).MatchString(name) && len(name) >= 2 && name[:2] == "__" && name[len(name)-2:] == "__"
		want := top || skipMeta.MatchString(name)
		got := isMeta(name)
		assert.Equal(t, want, got, "isMeta(%q) = %v, want %v", name, got, want)
	}
}
