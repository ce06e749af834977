package webdataset

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseManifestIndex(t *testing.T) {
	sum := strings.Repeat("0F", 32)
	for _, tc := range []struct {
		name, in string
		shards   int
		bad      string
	}{
		{"webdataset", `{"format":"webdataset","version":1,"shards":[{"name":"a.tar","bytes":3,"samples":1,"sha256":"` + sum + `"}]}`, 1, ""},
		{"npy shards", `{"shards":[{"name":"x.npy","bytes":1,"sha256":"` + sum + `"},{"name":"sub/y.npy","bytes":2,"sha256":"` + sum + `"}]}`, 2, ""},
		{"another kind of JSON", `{"pages":[1]}`, 0, ""},
		{"a weight map", `{"weight_map":{"a":"b"}}`, 0, ""},
		{"shards of another shape", `{"shards":"all"}`, 0, ""},
		{"not JSON", `{`, 0, "not JSON"},
		{"empty", ``, 0, "not JSON"},
		{"no name", `{"shards":[{"name":"","sha256":"` + sum + `"}]}`, 0, "no name"},
		{"bad digest", `{"shards":[{"name":"x.bin","sha256":"zz"}]}`, 0, "64 hex digits"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ix, err := ParseManifestIndex([]byte(tc.in), "/d/index.json")
			if tc.bad != "" {
				require.ErrorIs(t, err, ErrManifest, "err %v, want ErrManifest naming the manifest and saying %q", err, tc.bad)
				require.ErrorContains(t, err, tc.bad, "err %v, want ErrManifest naming the manifest and saying %q", err, tc.bad)
				require.ErrorContains(t, err, "/d/index.json", "err %v, want ErrManifest naming the manifest and saying %q", err, tc.bad)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.shards, ix.Len(), "%d shards, want %d", ix.Len(), tc.shards)
			if tc.shards > 0 {
				e, ok := ix.Lookup("x.npy")
				require.False(t, tc.name == "npy shards" && (!ok || e.SHA256 != strings.ToLower(sum)), "lookup x.npy: %+v %t, want its lower-case digest", e, ok)
			}
		})
	}
}

// FuzzParseManifestIndex: any bytes give a manifest, nothing (another kind
// of JSON), or an error naming the file; accepted shards have names and 64
// hex digit sums.
func FuzzParseManifestIndex(f *testing.F) {
	sum := strings.Repeat("0f", 32)
	f.Add([]byte(`{"format":"webdataset","shards":[{"name":"a.tar","bytes":1,"sha256":"` + sum + `"}]}`))
	f.Add([]byte(`{"shards":[{"name":"","sha256":"` + sum + `"}]}`))
	f.Add([]byte(`{"weight_map":{}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ix, err := ParseManifestIndex(b, "/d/index.json")
		if err != nil {
			require.ErrorContains(t, err, "/d/index.json", "error %q does not name the manifest", err)
			require.ErrorIs(t, err, ErrManifest, "error %q does not name the manifest", err)
			return
		}
		if ix == nil {
			return
		}
		for name, s := range ix.shards {
			require.NotEmpty(t, name, "accepted shard %+v under %q", s, name)
			require.Equal(t, name, s.Name, "accepted shard %+v under %q", s, name)
			require.Len(t, s.SHA256, 64, "accepted shard %+v under %q", s, name)
			require.Equal(t, s.SHA256, strings.ToLower(s.SHA256), "accepted shard %+v under %q", s, name)
		}
	})
}
