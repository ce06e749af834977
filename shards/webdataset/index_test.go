package webdataset

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdsload/gdsload/internal/rdmafstest"
	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/vfs"
	"github.com/gdsload/gdsload/vfs/rdmafsfs"
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

func hexSum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// The manifest beside files, local or on an rdmafs server, checks their
// sizes before a load and their digests after; a broken one is an error.
func TestManifestChecks(t *testing.T) {
	root := t.TempDir()
	data := map[string][]byte{"s-0.tar": []byte("zero"), "s-1.tar": []byte("one!!")}
	var entries []string
	for name, b := range data {
		if err := os.WriteFile(filepath.Join(root, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
		entries = append(entries, fmt.Sprintf(`{"name":%q,"bytes":%d,"samples":1,"sha256":%q}`, name, len(b), hexSum(b)))
	}
	if err := os.WriteFile(filepath.Join(root, "unlisted.bin"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	manifest := `{"format":"webdataset","version":1,"shards":[` + strings.Join(entries, ",") + `]}`
	if err := os.WriteFile(filepath.Join(root, ManifestName), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	remote := rdmafstest.Serve(t, root)
	m, err := vfs.New(rdmafsfs.With(rdmafstest.Options()...))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	for _, base := range []string{root, remote} {
		files, err := m.OpenAll(ctx, []string{vfs.Join(base, "s-0.tar"), vfs.Join(base, "s-1.tar"), vfs.Join(base, "unlisted.bin")})
		if err != nil {
			t.Fatal(err)
		}
		names := []string{files[0].Name(), files[1].Name(), files[2].Name()}
		checks, err := NewManifests(m).Checks(ctx, names)
		if err != nil {
			t.Fatal(err)
		}
		if len(checks) != 2 || checks[names[0]].Manifest != vfs.Join(base, ManifestName) {
			t.Fatalf("%s: checks %+v", base, checks)
		}
		if err := checks.CheckSizes(files.Sources()); err != nil {
			t.Fatalf("%s: sizes: %v", base, err)
		}
		res, err := loader.Load(ctx, []loader.Job{
			loader.WholeFile(files[0], loader.NewHostBuffer(make([]byte, 4))),
			loader.WholeFile(files[1], loader.NewHostBuffer(make([]byte, 5))),
		}, loader.Options{Checksum: loader.ChecksumSHA256})
		if err != nil {
			t.Fatal(err)
		}
		if err := checks.CheckDigests(res.Files); err != nil {
			t.Fatalf("%s: digests: %v", base, err)
		}
		bad := res.Files[1]
		bad.SHA256 = hexSum([]byte("other"))
		if err := checks.CheckDigests([]loader.FileResult{bad}); !errors.Is(err, ErrShardChecksum) || !strings.Contains(err.Error(), "s-1.tar") || !strings.Contains(err.Error(), "manifest lists") {
			t.Fatalf("%s: a wrong digest: %v", base, err)
		}
		if err := (Checks{names[0]: checks[names[0]]}).CheckSizes([]loader.Source{sized{names[0], 1024}}); !errors.Is(err, ErrShardSize) || !strings.Contains(err.Error(), "1024 bytes, the manifest lists 4") {
			t.Fatalf("%s: a wrong size: %v", base, err)
		}
		files.Close()
	}
	if err := os.WriteFile(filepath.Join(root, ManifestName), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := NewManifests(m).Checks(ctx, []string{vfs.Join(remote, "s-0.tar")}); !errors.Is(err, ErrManifest) {
		t.Fatalf("a broken remote manifest: %v", err)
	}
	if ix, err := NewManifests(m).In(ctx, t.TempDir()); ix != nil || err != nil {
		t.Fatalf("no manifest: %v, %v", ix, err)
	}
}

type sized struct {
	name string
	n    int64
}

func (s sized) ReadAt(p []byte, off int64) (int, error) { return 0, errors.New("not read") }
func (s sized) Name() string                            { return s.name }
func (s sized) Size() int64                             { return s.n }
