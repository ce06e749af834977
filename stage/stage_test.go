package stage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gdsload/gdsload/internal/fileops"
	"github.com/gdsload/gdsload/internal/fileops/errorfs"
	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/shards/safetensors"
	"github.com/gdsload/gdsload/vfs"
	"github.com/stretchr/testify/require"
)

// makeCheckpoint writes a sharded safetensors checkpoint (index and three
// shards) plus a stray file the index does not name.
func makeCheckpoint(t *testing.T, dir string) (index string, files []string) {
	t.Helper()
	weightMap := map[string]string{}
	for i, n := range []int{1<<20 + 3, 3 << 20, 4096} {
		name := fmt.Sprintf("model-%05d-of-00003.safetensors", i+1)
		data := bytes.Repeat([]byte{byte(i + 1)}, n*4)
		var buf bytes.Buffer
		tname := fmt.Sprintf("layers.%d.weight", i)
		require.NoError(t, safetensors.Encode(&buf, []safetensors.TensorData{{Name: tname, Dtype: "F32", Shape: []int64{int64(n)}, Data: data}}, nil))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o644))
		weightMap[tname] = name
		files = append(files, name)
	}
	b, err := json.Marshal(map[string]any{"metadata": map[string]any{"total_size": 1}, "weight_map": weightMap})
	require.NoError(t, err)
	index = filepath.Join(dir, "model.safetensors.index.json")
	require.NoError(t, os.WriteFile(index, b, 0o644))
	writeFile(t, dir, "stray.bin", 100, 1)
	return index, append(files, filepath.Base(index))
}

func TestStageShardedCheckpoint(t *testing.T) {
	src, dst := t.TempDir(), filepath.Join(t.TempDir(), "new", "dst")
	index, files := makeCheckpoint(t, src)
	res, err := stage(t, dst, Options{Workers: 3, ChunkSize: 1 << 20}, index)
	require.NoError(t, err)
	require.Equal(t, 4, res.Files)
	require.Equal(t, 4, res.Copied)
	require.Zero(t, res.Skipped)
	requireSame(t, src, dst, files...)
	require.NoFileExists(t, filepath.Join(dst, "stray.bin"))
	for _, f := range res.Entries {
		require.Equal(t, fileSHA(t, filepath.Join(dst, f.Name)), f.Digest, f.Name)
		require.Equal(t, fileCRC(t, filepath.Join(dst, f.Name)), f.WrittenCRC32C, f.Name)
		require.Equal(t, StatusCopied, f.Status)
		require.True(t, f.DirectWrite, res.Reason) // t.TempDir is ext4 or tmpfs: both take O_DIRECT
	}
	requireClean(t, dst)
}

func TestStageDirectoryLikeRsyncAndBraces(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	rels := []string{"a.bin", "sub/b.bin", "sub/deeper/c.bin", "empty.bin"}
	for i, rel := range rels {
		writeFile(t, src, rel, []int{5<<20 + 1, 4097, 1, 0}[i], uint64(i))
	}
	// A staged directory's sidecar and temporaries are not data.
	writeFile(t, src, SidecarName+"/journal.jsonl", 10, 9)
	writeFile(t, src, "sub/.b.bin.gdsload-abc123", 10, 9)
	res, err := stage(t, dst, Options{Workers: 4, ChunkSize: 1 << 20, Checksum: loader.ChecksumCRC32C}, src)
	require.NoError(t, err)
	require.Equal(t, 4, res.Copied, "%+v", res.Entries)
	requireSame(t, src, dst, rels...)
	require.Equal(t, loader.ChecksumCRC32C, byName(res)["sub/b.bin"].Checksum)
	require.Len(t, byName(res)["sub/b.bin"].Digest, 8)

	shards, dst2 := t.TempDir(), t.TempDir()
	for i := range 4 {
		writeFile(t, shards, fmt.Sprintf("shard-%03d.bin", i), 1000+i, uint64(i))
	}
	res, err = stage(t, dst2, Options{}, filepath.Join(shards, "shard-{000..002}.bin"))
	require.NoError(t, err)
	require.Equal(t, 3, res.Copied)
	requireSame(t, shards, dst2, "shard-000.bin", "shard-001.bin", "shard-002.bin")
	require.NoFileExists(t, filepath.Join(dst2, "shard-003.bin"))
}

func TestStageResumeSkipsUnchanged(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	var rels []string
	for i := range 6 {
		rel := fmt.Sprintf("d%d/f%d.bin", i%2, i)
		writeFile(t, src, rel, 100000*(i+1), uint64(i))
		rels = append(rels, rel)
	}
	_, err := stage(t, dst, Options{Workers: 2}, src)
	require.NoError(t, err)
	before := map[string]identity{}
	for _, rel := range rels {
		before[rel] = identify(t, filepath.Join(dst, rel))
	}
	// A file copied again would be a new inode, renamed into place.
	res, err := stage(t, dst, Options{Workers: 2}, src)
	require.NoError(t, err)
	require.Zero(t, res.Copied)
	require.Equal(t, 6, res.Skipped)
	for _, rel := range rels {
		require.Equal(t, before[rel], identify(t, filepath.Join(dst, rel)), rel)
		require.Equal(t, fileSHA(t, filepath.Join(dst, rel)), byName(res)[rel].Digest)
	}

	// A destination file removed or replaced behind the journal's back is
	// staged again.
	require.NoError(t, os.Remove(filepath.Join(dst, rels[0])))
	require.NoError(t, os.WriteFile(filepath.Join(dst, rels[1]), []byte("tampered"), 0o644))
	res, err = stage(t, dst, Options{Workers: 2}, src)
	require.NoError(t, err)
	require.Equal(t, 2, res.Copied)
	requireSame(t, src, dst, rels...)
}

func TestStageSourceChangedRestages(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	a := writeFile(t, src, "a.bin", 1<<20, 1)
	b := writeFile(t, src, "b.bin", 1<<20, 2)
	_, err := stage(t, dst, Options{}, src)
	require.NoError(t, err)
	keep := identify(t, filepath.Join(dst, "b.bin"))

	// Same size, new bytes, new mtime.
	writeFile(t, src, "a.bin", 1<<20, 3)
	require.NoError(t, os.Chtimes(a, time.Now(), time.Now().Add(time.Second)))
	res, err := stage(t, dst, Options{}, src)
	require.NoError(t, err)
	require.Equal(t, 1, res.Copied)
	require.Equal(t, StatusCopied, byName(res)["a.bin"].Status)
	require.Equal(t, StatusSkipped, byName(res)["b.bin"].Status)
	require.Equal(t, keep, identify(t, filepath.Join(dst, "b.bin")))
	requireSame(t, src, dst, "a.bin", "b.bin")

	// A new size alone is enough.
	require.NoError(t, os.Truncate(b, 1000))
	st, err := os.Stat(filepath.Join(dst, "b.bin"))
	require.NoError(t, err)
	require.NoError(t, os.Chtimes(b, st.ModTime(), keep.mtime)) // even with the old mtime
	res, err = stage(t, dst, Options{}, src)
	require.NoError(t, err)
	require.Equal(t, 1, res.Copied)
	requireSame(t, src, dst, "a.bin", "b.bin")
}

func TestStageLock(t *testing.T) {
	dst := t.TempDir()
	s, err := Open(dst, Options{})
	require.NoError(t, err)
	_, err = Open(dst, Options{})
	require.ErrorIs(t, err, ErrLocked)
	require.ErrorContains(t, err, "pid "+strconv.Itoa(os.Getpid()))
	require.ErrorContains(t, err, dst)
	require.NoError(t, s.Close())
	s, err = Open(dst, Options{})
	require.NoError(t, err, "the lock is free once released")
	require.NoError(t, s.Close())
}

func TestStageRemovesStaleTemps(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	writeFile(t, src, "x/a.bin", 5000, 1)
	stale := []string{
		writeFile(t, dst, ".a.bin.gdsload-abc123", 10, 1),
		writeFile(t, dst, "x/.a.bin.gdsload-zz9zz9", 10, 2),
	}
	mine := []string{
		writeFile(t, dst, ".keep", 10, 3),
		writeFile(t, dst, "x/.a.bin.XyZ123", 10, 4), // rsync's, not ours
	}
	res, err := stage(t, dst, Options{}, src)
	require.NoError(t, err)
	require.Equal(t, 2, res.RemovedTemps)
	for _, p := range stale {
		require.NoFileExists(t, p)
	}
	for _, p := range mine {
		require.FileExists(t, p)
	}
	requireSame(t, src, dst, "x/a.bin")
}

func TestStageReadback(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	for i := range 3 {
		writeFile(t, src, fmt.Sprintf("f%d.bin", i), 2<<20+i*777, uint64(i))
	}
	res, err := stage(t, dst, Options{Verify: VerifyReadback, ChunkSize: 1 << 20}, src)
	require.NoError(t, err)
	require.Equal(t, VerifyReadback, res.Verify)
	require.Equal(t, 3, res.Copied)
	requireSame(t, src, dst, "f0.bin", "f1.bin", "f2.bin")
}

func TestStageReadbackCatchesCorruption(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	writeFile(t, src, "good.bin", 3<<20, 1)
	writeFile(t, src, "rotten.bin", 3<<20, 2)
	opts := Options{Verify: VerifyReadback, Workers: 2}
	// Flip a byte of the written file at its fsync, after its writes were
	// checked and before its read-back, as a failing device would.
	opts.fs = errorfs.Wrap(fileops.Default(), func(op *errorfs.Op) error {
		if op.Kind != errorfs.OpSync || !strings.HasPrefix(filepath.Base(op.Path), ".rotten.bin.") {
			return nil
		}
		f, err := os.OpenFile(op.Path, os.O_RDWR, 0)
		require.NoError(t, err)
		defer f.Close()
		_, err = f.WriteAt([]byte{0xff ^ byte(len(op.Path))}, 12345)
		require.NoError(t, err)
		return nil
	})
	_, err := stage(t, dst, opts, src)
	require.ErrorContains(t, err, "rotten.bin: read back sha256")
	require.NoFileExists(t, filepath.Join(dst, "rotten.bin"))
	requireClean(t, dst)
}

func TestStageManifestMismatchNamesTheFile(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	type shard struct {
		Name    string `json:"name"`
		Bytes   int64  `json:"bytes"`
		Samples int64  `json:"samples"`
		SHA256  string `json:"sha256"`
	}
	var shards []shard
	for i := range 3 {
		name := fmt.Sprintf("shard-%03d.tar", i)
		p := writeFile(t, src, name, 200000+i, uint64(i))
		shards = append(shards, shard{Name: name, Bytes: int64(200000 + i), Samples: 10, SHA256: fileSHA(t, p)})
	}
	writeManifest := func() {
		b, err := json.Marshal(map[string]any{"format": "webdataset", "version": 1, "shards": shards})
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(src, "index.json"), b, 0o644))
	}
	writeManifest()
	res, err := stage(t, dst, Options{Checksum: loader.ChecksumCRC32C}, src)
	require.NoError(t, err)
	f := byName(res)["shard-001.tar"]
	require.Equal(t, filepath.Join(src, "index.json"), f.Manifest)
	require.Equal(t, loader.ChecksumSHA256, f.Checksum, "files a manifest lists are checked with sha256")
	require.Equal(t, shards[1].SHA256, f.Digest)

	// The mismatching shard fails alone: the others are staged, the
	// result lists it as failed and the error names it and the manifest.
	dst = t.TempDir()
	shards[1].SHA256 = fileSHA(t, filepath.Join(src, "shard-000.tar"))
	writeManifest()
	res, err = stage(t, dst, Options{}, src)
	var pe *PartialError
	require.ErrorAs(t, err, &pe)
	require.ErrorContains(t, err, "source "+filepath.Join(src, "shard-001.tar")+" (shard-001.tar): the sha256 of the bytes read is")
	require.ErrorContains(t, err, "manifest "+filepath.Join(src, "index.json"))
	require.Equal(t, 1, res.Failed)
	require.Equal(t, StatusFailed, byName(res)["shard-001.tar"].Status)
	require.NoFileExists(t, filepath.Join(dst, "shard-001.tar"))
	requireSame(t, src, dst, "shard-000.tar", "shard-002.tar", "index.json")
	requireClean(t, dst)

	// FailFast stops at it, with no result.
	dst = t.TempDir()
	res, err = stage(t, dst, Options{FailFast: true, Workers: 1}, src)
	require.Nil(t, res)
	require.ErrorIs(t, err, ErrManifestMismatch)
	require.NoFileExists(t, filepath.Join(dst, "shard-001.tar"))
	requireClean(t, dst)

	shards[1].Bytes++
	writeManifest()
	_, err = stage(t, dst, Options{}, src)
	require.ErrorContains(t, err, "lists 200002")
}

func TestStageErrors(t *testing.T) {
	dst := t.TempDir()
	_, err := stage(t, dst, Options{}, filepath.Join(t.TempDir(), "missing.bin"))
	require.ErrorContains(t, err, "missing.bin does not exist")

	// A source that vanishes between listing and staging.
	src := t.TempDir()
	p := writeFile(t, src, "gone.bin", 100, 1)
	entries, err := Expand(context.Background(), []string{src}, Options{})
	require.NoError(t, err)
	require.NoError(t, os.Remove(p))
	_, err = stageEntries(t, dst, Options{}, entries)
	require.ErrorContains(t, err, "source "+p+" does not exist")
	requireClean(t, dst)

	// A destination inside a source.
	writeFile(t, src, "here.bin", 100, 2)
	_, err = stage(t, filepath.Join(src, "nvme"), Options{}, src)
	require.NoError(t, err, "the first run does not see the destination yet")
	_, err = stage(t, filepath.Join(src, "nvme"), Options{}, src)
	require.ErrorContains(t, err, "is inside the destination")

	// A server that cannot be reached is an error naming it.
	_, err = Expand(context.Background(), []string{"rdmafs://127.0.0.1:1/ckpt/"}, Options{})
	require.ErrorContains(t, err, "127.0.0.1:1")

	// An index.json of another kind is data, not a manifest; a broken
	// manifest is an error naming it.
	other := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(other, "index.json"), []byte(`{"pages":[1]}`), 0o644))
	writeFile(t, other, "x.bin", 10, 1)
	es, err := Expand(context.Background(), []string{other}, Options{})
	require.NoError(t, err)
	require.Len(t, es, 2)
	require.Empty(t, es[1].Expect)
	require.NoError(t, os.WriteFile(filepath.Join(other, "index.json"), []byte(`{"shards":[{"name":"x.bin","sha256":"zz"}]}`), 0o644))
	_, err = Expand(context.Background(), []string{other}, Options{})
	require.ErrorContains(t, err, "manifest "+filepath.Join(other, "index.json"))

	// Two sources for one destination name.
	a, b := t.TempDir(), t.TempDir()
	writeFile(t, a, "x.bin", 1, 1)
	writeFile(t, b, "x.bin", 1, 2)
	_, err = Expand(context.Background(), []string{a, b}, Options{})
	require.ErrorContains(t, err, "would both be staged as x.bin")
}

func TestStageCancelLeavesNoTemp(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	for i := range 8 {
		writeFile(t, src, fmt.Sprintf("f%d.bin", i), 2<<20, uint64(i))
	}
	entries, err := Expand(context.Background(), []string{src}, Options{})
	require.NoError(t, err)
	s, err := Open(dst, Options{Workers: 2, ChunkSize: 256 << 10})
	require.NoError(t, err)
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var seen atomic.Int64
	s.opts.OnProgress = func(n int64) {
		if seen.Add(n) > 3<<20 {
			cancel()
		}
	}
	p, err := s.Plan(ctx, entries)
	require.NoError(t, err)
	_, err = s.Run(ctx, p)
	require.ErrorIs(t, err, context.Canceled)
	requireClean(t, dst)
}

// link makes a symbolic link to target in a fresh directory and returns it.
func link(t *testing.T, target string) string {
	t.Helper()
	l := filepath.Join(t.TempDir(), "link")
	require.NoError(t, os.MkdirAll(target, 0o755))
	require.NoError(t, os.Symlink(target, l))
	return l
}

func TestCheckDestination(t *testing.T) {
	src := t.TempDir()
	file := filepath.Join(src, "f.bin")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sources []string
		dest    string
		want    string // "" for no error
	}{
		{[]string{src}, filepath.Join(src, "sub", "out"), "inside the source directory"},
		{[]string{src}, src, "the source directory"},
		{[]string{src}, src + "-out", ""}, // a sibling sharing the prefix
		{[]string{file}, filepath.Join(src, "out"), ""},
		{[]string{"rdmafs://h:1/x"}, filepath.Join(src, "out"), ""},
		{[]string{filepath.Join(src, "{a,b}")}, filepath.Join(src, "out"), ""},
		// Links are resolved: a link to the source, or into it, is the
		// source (ln -s src srclink; ln -s src/sub sublink).
		{[]string{src}, link(t, src), "the source directory"},
		{[]string{src}, link(t, filepath.Join(src, "sub")), "inside the source directory"},
		{[]string{src}, filepath.Join(link(t, src), "new", "out"), "inside the source directory"},
		{[]string{link(t, src)}, filepath.Join(src, "out"), "inside the source directory"},
		{[]string{src}, link(t, t.TempDir()), ""},
	} {
		err := CheckDestination(tc.sources, tc.dest)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckDestination(%v, %s) = %v, want %q", tc.sources, tc.dest, err, tc.want)
		}
	}
}

// A name that is not UTF-8 must match its journal record on the next run,
// not be copied again on every one.
func TestStageResumeNonUTF8Names(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	rels := []string{"d\xff\xfe/f\xe9.bin", "plain.bin"}
	for i, rel := range rels {
		writeFile(t, src, rel, 5000+i, uint64(i))
	}
	res, err := stage(t, dst, Options{Workers: 2}, src)
	require.NoError(t, err)
	require.Equal(t, 2, res.Copied)
	requireSame(t, src, dst, rels...)
	res, err = stage(t, dst, Options{Workers: 2}, src)
	require.NoError(t, err)
	require.Zero(t, res.Copied, "files staged again: %+v", res.Files)
	require.Equal(t, 2, res.Skipped)
	require.Contains(t, byName(res), rels[0])
}

func TestJournalRoundTripsNonUTF8(t *testing.T) {
	for _, name := range []string{"plain", "d\xff\xfe/f\xe9.bin", "ünïcode/ok", "\xc3"} {
		r := record{Rel: name, Source: "/src/" + name, Size: 7}
		line, err := json.Marshal(r.encoded())
		require.NoError(t, err)
		got := parseJournal(append(line, '\n'))
		require.Equal(t, r, got[name], "line %s", line)
	}
}

// faultyScheme serves local files as faulty://local/PATH, refusing to
// open some and handing out others whose reads fail past an offset.
type faultyScheme struct {
	refuse   map[string]bool  // base names: open fails with EACCES
	failRead map[string]int64 // base names: reads at or past this fail
}

func (s faultyScheme) FS(context.Context, string) (vfs.FS, error) { return faultyFS{s}, nil }

type faultyFS struct{ faultyScheme }

func (f faultyFS) Stat(ctx context.Context, name string) (fs.FileInfo, error) {
	return vfs.Local().Stat(ctx, "/"+name)
}

func (f faultyFS) List(ctx context.Context, name string) ([]fs.FileInfo, error) {
	return vfs.Local().List(ctx, "/"+name)
}

func (f faultyFS) Open(_ context.Context, name string) (vfs.File, error) {
	base := filepath.Base(name)
	if f.refuse[base] {
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.EACCES}
	}
	lf, err := loader.OpenFile("/"+name, loader.DirectAuto)
	if err != nil {
		return nil, err
	}
	if off, ok := f.failRead[base]; ok {
		return &failingSource{File: lf, at: off}, nil
	}
	return lf, nil
}

// faultyFS is a Mux serving s under faulty://local.
func faultyMux(t *testing.T, s faultyScheme) *vfs.Mux {
	t.Helper()
	m, err := vfs.New(vfs.WithScheme("faulty", s))
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	return m
}

type failingSource struct {
	*loader.File
	at int64
}

func (s *failingSource) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > s.at {
		return 0, fmt.Errorf("read %s at offset %d: %w", s.Name(), off, syscall.EIO)
	}
	return s.File.ReadAt(p, off)
}

// As rsync and rclone do, one unreadable file does not stop a stage: the
// others are staged, the failures are listed, and a rerun copies only
// what failed.
func TestStageKeepsGoingPastFailedSources(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	var rels []string
	for i := range 6 {
		rel := fmt.Sprintf("f%d.bin", i)
		writeFile(t, src, rel, 300000+i, uint64(i))
		rels = append(rels, rel)
	}
	bad := faultyMux(t, faultyScheme{refuse: map[string]bool{"f1.bin": true}, failRead: map[string]int64{"f4.bin": 100000}})
	res, err := stage(t, dst, Options{Workers: 2, ChunkSize: 64 << 10, FS: bad}, "faulty://local"+src)
	var pe *PartialError
	require.ErrorAs(t, err, &pe)
	require.Len(t, pe.Failed, 2)
	require.ErrorContains(t, err, "2 of 6 files could not be staged")
	require.ErrorContains(t, err, "f1.bin is not readable: permission denied")
	require.ErrorContains(t, err, "f4.bin")
	require.ErrorContains(t, err, "input/output error")
	require.Equal(t, 4, res.Copied)
	require.Equal(t, 2, res.Failed)
	for _, rel := range []string{"f1.bin", "f4.bin"} {
		require.Equal(t, StatusFailed, byName(res)[rel].Status, rel)
		require.NoFileExists(t, filepath.Join(dst, rel))
	}
	requireSame(t, src, dst, "f0.bin", "f2.bin", "f3.bin", "f5.bin")
	requireClean(t, dst)

	res, err = stage(t, dst, Options{Workers: 2}, src)
	require.NoError(t, err)
	require.Equal(t, 2, res.Copied)
	require.Equal(t, 4, res.Skipped)
	requireSame(t, src, dst, rels...)

	// When every file fails, the error says so: nothing was staged.
	res, err = stage(t, t.TempDir(), Options{FS: bad}, "faulty://local"+filepath.Join(src, "f1.bin"))
	require.ErrorAs(t, err, &pe)
	require.True(t, pe.All())
	require.ErrorContains(t, err, "the file could not be staged:")
	require.Equal(t, 1, res.Failed)

	// FailFast stops at the first: nothing of the failed file is left.
	dst = t.TempDir()
	_, err = stage(t, dst, Options{Workers: 2, FailFast: true, FS: bad}, "faulty://local"+src)
	require.ErrorIs(t, err, fs.ErrPermission)
	require.NoFileExists(t, filepath.Join(dst, "f1.bin"))
	requireClean(t, dst)
}

// A staged file damaged in place, its mtime put back, still looks staged;
// Reverify re-hashes it and stages it again.
func TestStageReverifyFindsDamageInPlace(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	for i := range 3 {
		writeFile(t, src, fmt.Sprintf("f%d.bin", i), 70000+i, uint64(i))
	}
	_, err := stage(t, dst, Options{}, src)
	require.NoError(t, err)
	victim := filepath.Join(dst, "f1.bin")
	st, err := os.Stat(victim)
	require.NoError(t, err)
	f, err := os.OpenFile(victim, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte("rot"), 1234)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.NoError(t, os.Chtimes(victim, st.ModTime(), st.ModTime()))

	res, err := stage(t, dst, Options{}, src)
	require.NoError(t, err)
	require.Equal(t, 3, res.Skipped, "without a re-verify the damage is not seen")

	res, err = stage(t, dst, Options{Reverify: true}, src)
	require.NoError(t, err)
	require.Equal(t, 1, res.Copied)
	require.Equal(t, 1, res.Damaged)
	require.Equal(t, 2, res.Skipped)
	require.Contains(t, byName(res)["f1.bin"].Reason, "changed in place")
	requireSame(t, src, dst, "f0.bin", "f1.bin", "f2.bin")

	res, err = stage(t, dst, Options{Reverify: true}, src)
	require.NoError(t, err)
	require.Zero(t, res.Copied)
	require.Zero(t, res.Damaged)
}
