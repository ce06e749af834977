package stage

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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gdsload/gdsload/internal/rdmafstest"
	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/shards/webdataset"
	"github.com/gdsload/gdsload/vfs"
	"github.com/gdsload/gdsload/vfs/rdmafsfs"
)

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
	if err := os.WriteFile(filepath.Join(root, webdataset.ManifestName), []byte(manifest), 0o644); err != nil {
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
		checks, err := ManifestChecks(ctx, names, Options{FS: m})
		if err != nil {
			t.Fatal(err)
		}
		if len(checks) != 2 || checks[names[0]].Manifest != vfs.Join(base, webdataset.ManifestName) {
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
		if err := checks.CheckDigests([]loader.FileResult{bad}); !errors.Is(err, webdataset.ErrShardChecksum) || !strings.Contains(err.Error(), "s-1.tar") || !strings.Contains(err.Error(), "manifest lists") {
			t.Fatalf("%s: a wrong digest: %v", base, err)
		}
		if err := (Checks{names[0]: checks[names[0]]}).CheckSizes([]loader.Source{sized{names[0], 1024}}); !errors.Is(err, webdataset.ErrShardSize) || !strings.Contains(err.Error(), "1024 bytes, the manifest lists 4") {
			t.Fatalf("%s: a wrong size: %v", base, err)
		}
		files.Close()
	}
	if err := os.WriteFile(filepath.Join(root, webdataset.ManifestName), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ManifestChecks(ctx, []string{vfs.Join(remote, "s-0.tar")}, Options{FS: m}); !errors.Is(err, webdataset.ErrManifest) {
		t.Fatalf("a broken remote manifest: %v", err)
	}
	if ix, err := newManifests(m).in(ctx, t.TempDir()); ix != nil || err != nil {
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

// A folder's shards are listed alike on a disk and on an rdmafs server,
// subfolders included and dot folders left out, and CheckListed names a
// shard there that the manifest does not list.
func TestShardFilesAndCheckListed(t *testing.T) {
	root := t.TempDir()
	for _, rel := range []string{"a/shard-000000.tar", "shard-000001.tar", ".gdsload-stage/shard-000009.tar", "notes.txt"} {
		p := filepath.Join(root, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(rel), 0o644))
	}
	man := &webdataset.Manifest{Format: "webdataset", Version: 1, Shards: []webdataset.ShardEntry{{Name: "a/shard-000000.tar"}}}
	remote := rdmafstest.Serve(t, root)
	m, err := vfs.New(rdmafsfs.With(rdmafstest.Options()...))
	require.NoError(t, err)
	defer m.Close()
	ctx := context.Background()
	for _, base := range []string{root, remote} {
		names, err := ShardFiles(ctx, base, Options{FS: m})
		require.NoError(t, err)
		assert.Equal(t, []string{"a/shard-000000.tar", "shard-000001.tar"}, names, base)
		err = CheckListed(ctx, base, man, Options{FS: m})
		require.ErrorIs(t, err, webdataset.ErrUnlisted, base)
		assert.Contains(t, err.Error(), "(1): shard-000001.tar", base)
	}
	names, err := ShardFiles(ctx, root, Options{}) // a Mux made for the call
	require.NoError(t, err)
	assert.Len(t, names, 2)
}
