package webdataset

import (
	"errors"
	"strings"
	"testing"
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
				if !errors.Is(err, ErrManifest) || !strings.Contains(err.Error(), tc.bad) || !strings.Contains(err.Error(), "/d/index.json") {
					t.Fatalf("err %v, want ErrManifest naming the manifest and saying %q", err, tc.bad)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ix.Len() != tc.shards {
				t.Fatalf("%d shards, want %d", ix.Len(), tc.shards)
			}
			if tc.shards > 0 {
				if e, ok := ix.Lookup("x.npy"); tc.name == "npy shards" && (!ok || e.SHA256 != strings.ToLower(sum)) {
					t.Fatalf("lookup x.npy: %+v %t, want its lower-case digest", e, ok)
				}
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
			if !strings.Contains(err.Error(), "/d/index.json") || !errors.Is(err, ErrManifest) {
				t.Fatalf("error %q does not name the manifest", err)
			}
			return
		}
		if ix == nil {
			return
		}
		for name, s := range ix.shards {
			if name == "" || s.Name != name || len(s.SHA256) != 64 || strings.ToLower(s.SHA256) != s.SHA256 {
				t.Fatalf("accepted shard %+v under %q", s, name)
			}
		}
	})
}
