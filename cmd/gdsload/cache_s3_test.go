package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gdsload/gdsload/internal/miniotest"
	"github.com/gdsload/gdsload/internal/toxitest"
	"github.com/gdsload/gdsload/shards/safetensors"
	"github.com/gdsload/gdsload/vfs/cache"
)

// cacheFixture is a MinIO of nodes nodes holding a WebDataset of 10
// shards and its manifest under s3://dset/wds/.
type cacheFixture struct {
	mc     *miniotest.Cluster
	local  string // the dataset as uploaded
	shards int
	bytes  int64 // the shards' and the manifest's bytes
}

const cacheShards = 10

func newCacheFixture(t *testing.T, nodes int) *cacheFixture {
	t.Helper()
	t.Setenv(cacheEnv, "")
	mc := miniotest.StartForTest(t, nodes)
	mc.SetEnv(t)
	require.NoError(t, mc.MakeBucket(context.Background(), "dset"))
	counts := make([]int, cacheShards)
	for i := range counts {
		counts[i] = 6
	}
	f := &cacheFixture{mc: mc, local: writeShards(t, counts...), shards: cacheShards}
	_, stderr, code := run(t, "manifest", f.local)
	require.Equal(t, 0, code, stderr)
	f.bytes = f.upload(t)
	return f
}

// upload puts every file of the local dataset and returns their bytes.
func (f *cacheFixture) upload(t *testing.T) int64 {
	t.Helper()
	ents, err := os.ReadDir(f.local)
	require.NoError(t, err)
	var n int64
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(f.local, e.Name()))
		require.NoError(t, err)
		_, err = f.mc.Put(context.Background(), "dset", "wds/"+e.Name(), b)
		require.NoError(t, err)
		n += int64(len(b))
	}
	return n
}

func (f *cacheFixture) traffic(t *testing.T) miniotest.Traffic {
	t.Helper()
	tr, err := f.mc.Traffic(context.Background())
	require.NoError(t, err)
	return tr
}

// iterated is what one iterate run yielded and what MinIO served for it.
type iterated struct {
	keys    []string
	sha256  string
	cache   *cache.Stats
	traffic miniotest.Traffic
}

// iterate runs `gdsload iterate --json --checksum sha256` over the dataset.
func (f *cacheFixture) iterate(t *testing.T, args ...string) iterated {
	t.Helper()
	before := f.traffic(t)
	argv := append([]string{"iterate", "--json", "--checksum", "sha256"}, args...)
	stdout, stderr, code := run(t, append(argv, "s3://dset/wds/")...)
	require.Equal(t, 0, code, stderr)
	return f.parse(t, stdout, before)
}

func (f *cacheFixture) parse(t *testing.T, stdout string, before miniotest.Traffic) iterated {
	t.Helper()
	keys, _ := parseLines(t, stdout)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	var sum struct {
		SHA256 string       `json:"sha256"`
		Cache  *cache.Stats `json:"cache"`
	}
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &sum))
	return iterated{keys: keys, sha256: sum.SHA256, cache: sum.Cache, traffic: f.traffic(t).Sub(before)}
}

func TestS3CacheIterate(t *testing.T) {
	f := newCacheFixture(t, 1)
	plain := f.iterate(t, "--epochs", "2")
	require.Len(t, plain.keys, 2*6*cacheShards)
	require.Nil(t, plain.cache)
	require.Equal(t, int64(2*cacheShards+1), plain.traffic.GetObjects, "without a cache each epoch reads every shard (and the manifest once)")
	require.Greater(t, plain.traffic.SentBytes, 2*f.bytes-f.bytes/cacheShards)

	t.Run("two epochs read each shard from MinIO once", func(t *testing.T) {
		dir := t.TempDir()
		got := f.iterate(t, "--epochs", "2", "--cache", dir)
		assert.Equal(t, plain.keys, got.keys)
		assert.Equal(t, plain.sha256, got.sha256)
		assert.Equal(t, int64(cacheShards+1), got.traffic.GetObjects, "MinIO's count: one GET per shard and the manifest")
		f.assertSentOnce(t, got.traffic)
		require.NotNil(t, got.cache)
		assert.Equal(t, int64(cacheShards+1), got.cache.Misses)
		assert.Equal(t, int64(cacheShards), got.cache.Hits)
		assert.Equal(t, f.bytes, got.cache.BytesDownloaded)

		again := f.iterate(t, "--epochs", "1", "--cache", dir)
		assert.Zero(t, again.traffic.GetObjects, "a later run reads only the cache")
		assert.Equal(t, plain.keys[:6*cacheShards], again.keys)
	})

	t.Run("cache-ahead downloads each shard once too", func(t *testing.T) {
		dir := t.TempDir()
		got := f.iterate(t, "--epochs", "2", "--cache", dir, "--cache-ahead", "4")
		assert.Equal(t, plain.keys, got.keys)
		assert.Equal(t, plain.sha256, got.sha256)
		assert.Equal(t, int64(cacheShards+1), got.traffic.GetObjects, "MinIO's count")
		_, stderr, code := run(t, "iterate", "--cache-ahead", "2", "s3://dset/wds/")
		assert.Equal(t, 2, code, "no folder: %s", stderr)
	})

	t.Run("a resumed run continues with a warm cache", func(t *testing.T) {
		dir, state := t.TempDir(), filepath.Join(t.TempDir(), "state.json")
		first := f.iterate(t, "--epochs", "2", "--cache", dir, "--limit", "45", "--state-out", state)
		rest := f.iterate(t, "--epochs", "2", "--cache", dir, "--resume", state)
		assert.Equal(t, plain.keys, append(first.keys, rest.keys...), "the samples of one uninterrupted run")
		assert.Equal(t, int64(cacheShards+1), first.traffic.GetObjects+rest.traffic.GetObjects, "each shard once over both runs")
		assert.Positive(t, rest.cache.Hits)
	})

	t.Run("a limit of 3 shards over 10", func(t *testing.T) {
		dir := t.TempDir()
		st, err := os.Stat(filepath.Join(f.local, "shard-0.tar"))
		require.NoError(t, err)
		limit := 3 * st.Size()
		got := f.iterate(t, "--epochs", "2", "--cache", dir, "--cache-limit", fmt.Sprint(limit))
		assert.Equal(t, plain.keys, got.keys)
		assert.Equal(t, plain.sha256, got.sha256)
		require.NotNil(t, got.cache)
		assert.Positive(t, got.cache.Evictions)
		assert.LessOrEqual(t, cacheBytes(t, dir), limit)

		// A limit under one shard fails before any shard is read.
		before := f.traffic(t)
		_, stderr, code := run(t, "iterate", "--cache", t.TempDir(), "--cache-limit", fmt.Sprint(st.Size()-1), "s3://dset/wds/")
		assert.Equal(t, 2, code, stderr)
		assert.Contains(t, stderr, "shard-0.tar")
		assert.Contains(t, stderr, "larger than the cache limit")
		assert.LessOrEqual(t, f.traffic(t).Sub(before).GetObjects, int64(1), "the manifest at most")
	})

	t.Run("a damaged entry is found by cache verify and refetched by a reader", func(t *testing.T) {
		dir := t.TempDir()
		f.iterate(t, "--cache", dir)
		entries := cacheDataFiles(t, dir)
		require.Len(t, entries, cacheShards+1)
		flip(t, entries[0])
		flip(t, entries[1])
		out, stderr, code := run(t, "cache", "verify", "--json", "--cache", dir)
		require.Equal(t, 1, code, stderr)
		var v struct {
			Checked int             `json:"checked"`
			Damaged []cache.Problem `json:"damaged"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &v))
		assert.Equal(t, cacheShards+1, v.Checked)
		assert.Len(t, v.Damaged, 2)
		_, stderr, code = run(t, "cache", "verify", "--cache", dir)
		require.Equal(t, 0, code, "verify removed what it found: %s", stderr)

		// Damage one more: the reader finds it on its hit and fetches it again.
		flip(t, cacheDataFiles(t, dir)[0])
		got := f.iterate(t, "--epochs", "2", "--cache", dir)
		assert.Equal(t, plain.sha256, got.sha256)
		assert.Equal(t, int64(3), got.traffic.GetObjects, "the two entries verify removed and the damaged one")
		assert.Equal(t, int64(1), got.cache.Refetched)
	})

	t.Run("cache ls, prune and clear", func(t *testing.T) {
		dir := t.TempDir()
		f.iterate(t, "--epochs", "2", "--cache", dir)
		out, stderr, code := run(t, "cache", "ls", "--json", "--cache", dir)
		require.Equal(t, 0, code, stderr)
		var ls struct {
			Entries []cache.Entry `json:"entries"`
			Bytes   int64         `json:"bytes"`
			HitRate float64       `json:"hit_rate"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &ls))
		assert.Len(t, ls.Entries, cacheShards+1)
		for _, e := range ls.Entries {
			want := "sha256" // the manifest's digest reached the cache
			if strings.HasSuffix(e.URL, ".json") {
				want = "etag-md5"
			}
			assert.Equal(t, want, e.Verified, e.URL)
		}
		assert.Equal(t, f.bytes, ls.Bytes)
		assert.InDelta(t, float64(cacheShards)/float64(2*cacheShards+1), ls.HitRate, 1e-9)

		_, stderr, code = run(t, "cache", "prune", "--to", fmt.Sprint(f.bytes/2), "--cache", dir)
		require.Equal(t, 0, code, stderr)
		assert.LessOrEqual(t, cacheBytes(t, dir), f.bytes/2)
		_, stderr, code = run(t, "cache", "clear", "--cache", dir)
		require.Equal(t, 0, code, stderr)
		assert.Zero(t, cacheBytes(t, dir))
		_, stderr, code = run(t, "cache", "ls")
		require.Equal(t, 2, code, "no folder is a usage error: %s", stderr)
	})

	t.Run("stage twice reads the store once", func(t *testing.T) {
		dir := t.TempDir()
		for i, wantGets := range []int64{cacheShards + 1, 0} {
			before := f.traffic(t)
			out, stderr, code := run(t, "stage", "--json", "--cache", dir, "s3://dset/wds/", t.TempDir())
			require.Equal(t, 0, code, stderr)
			var res struct {
				Cache *cache.Stats `json:"cache"`
			}
			require.NoError(t, json.Unmarshal([]byte(out), &res))
			require.NotNil(t, res.Cache)
			assert.Equal(t, wantGets, f.traffic(t).Sub(before).GetObjects, "run %d", i)
		}
	})

	t.Run("GDSLOAD_CACHE names the folder", func(t *testing.T) {
		dir := t.TempDir()
		t.Setenv(cacheEnv, dir)
		got := f.iterate(t)
		require.NotNil(t, got.cache)
		assert.Equal(t, f.bytes, cacheBytes(t, dir))
	})

	// Last: it replaces a shard.
	t.Run("an object replaced between runs is downloaded again", func(t *testing.T) {
		dir := t.TempDir()
		f.iterate(t, "--cache", dir)
		// New bytes for shard 3 and a manifest that says so.
		var buf bytes.Buffer
		writeTar(t, &buf, "k3-", 6, "y")
		require.NoError(t, os.WriteFile(filepath.Join(f.local, "shard-3.tar"), buf.Bytes(), 0o644))
		_, stderr, code := run(t, "manifest", f.local)
		require.Equal(t, 0, code, stderr)
		f.upload(t)
		fresh := f.iterate(t)
		require.NotEqual(t, plain.sha256, fresh.sha256)

		got := f.iterate(t, "--cache", dir)
		assert.Equal(t, fresh.sha256, got.sha256, "the new bytes are served")
		assert.Equal(t, int64(2), got.traffic.GetObjects, "the replaced shard and manifest, nothing else")
	})
}

// The ranks of a node share one cache folder: each shard comes from MinIO
// (a distributed, 4-node deployment: its nodes' counters add up) once, and
// each rank yields what it yields without a cache.
func TestS3CacheSharedByFourProcesses(t *testing.T) {
	f := newCacheFixture(t, 4)
	bin := gdsloadBinary(t)
	want := make([]iterated, 4)
	for r := range 4 {
		want[r] = f.iterate(t, "--epochs", "2", "--rank", fmt.Sprint(r), "--world-size", "4")
	}
	dir := t.TempDir()
	before := f.traffic(t)
	cmds := make([]*exec.Cmd, 4)
	outs := make([]*bytes.Buffer, 4)
	for r := range 4 {
		cmds[r] = exec.Command(bin, "iterate", "--json", "--checksum", "sha256", "--epochs", "2", "--rank", fmt.Sprint(r), "--world-size", "4", "--cache", dir, "s3://dset/wds/")
		outs[r] = &bytes.Buffer{}
		cmds[r].Stdout, cmds[r].Stderr = outs[r], os.Stderr
		require.NoError(t, cmds[r].Start())
	}
	var misses int64
	for r := range 4 {
		require.NoError(t, cmds[r].Wait(), "rank %d", r)
		got := f.parse(t, outs[r].String(), before)
		assert.Equal(t, want[r].keys, got.keys, "rank %d", r)
		assert.Equal(t, want[r].sha256, got.sha256, "rank %d", r)
		misses += got.cache.Misses
	}
	tr := f.traffic(t).Sub(before)
	assert.Equal(t, int64(cacheShards+1), tr.GetObjects, "MinIO's count: each shard and the manifest once, for all ranks")
	f.assertSentOnce(t, tr)
	assert.Equal(t, int64(cacheShards+1), misses)
}

// A second load of a checkpoint with --cache reads no data from MinIO.
func TestS3CacheLoadCheckpointTwice(t *testing.T) {
	t.Setenv(cacheEnv, "")
	mc := miniotest.StartForTest(t, 1)
	mc.SetEnv(t)
	ctx := context.Background()
	require.NoError(t, mc.MakeBucket(ctx, "models"))
	var buf bytes.Buffer
	const size = 256 << 20
	require.NoError(t, safetensors.Encode(&buf, []safetensors.TensorData{
		{Name: "w", Dtype: "U8", Shape: []int64{size}, Data: randomBytes(size, 33)},
	}, nil))
	_, err := mc.Put(ctx, "models", "m/model.safetensors", buf.Bytes())
	require.NoError(t, err)
	dir := t.TempDir()
	load := func() (string, miniotest.Traffic) {
		before, err := mc.Traffic(ctx)
		require.NoError(t, err)
		out, stderr, code := run(t, "load", "--to", "host", "--checksum", "sha256", "--json", "--cache", dir, "s3://models/m/model.safetensors")
		require.Equal(t, 0, code, stderr)
		after, err := mc.Traffic(ctx)
		require.NoError(t, err)
		var res struct {
			Files []struct {
				SHA256 string `json:"sha256"`
			} `json:"files"`
			Cache *cache.Stats `json:"cache"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &res))
		require.Len(t, res.Files, 1)
		require.NotNil(t, res.Cache)
		return res.Files[0].SHA256, after.Sub(before)
	}
	first, tr1 := load()
	assert.GreaterOrEqual(t, tr1.SentBytes, int64(buf.Len()), "the first load downloads it")
	second, tr2 := load()
	assert.Equal(t, first, second)
	assert.Zero(t, tr2.GetObjects, "MinIO's count: no GET on the second load")
	assert.Less(t, tr2.SentBytes, int64(1<<20), "only a HEAD's worth")
}

// assertSentOnce checks that MinIO sent the dataset once: its bytes, and
// the few hundred bytes of each process's listings and HEAD responses,
// less than one more shard.
func (f *cacheFixture) assertSentOnce(t *testing.T, tr miniotest.Traffic) {
	t.Helper()
	st, err := os.Stat(filepath.Join(f.local, "shard-0.tar"))
	require.NoError(t, err)
	assert.GreaterOrEqual(t, tr.SentBytes, f.bytes)
	assert.Less(t, tr.SentBytes, f.bytes+st.Size(), "MinIO sent the dataset once")
}

// cacheBytes is what the cache folder's copies take.
func cacheBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	for _, p := range cacheDataFiles(t, dir) {
		fi, err := os.Stat(p)
		require.NoError(t, err)
		n += fi.Size()
	}
	return n
}

func cacheDataFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "entries", "*.data"))
	require.NoError(t, err)
	return m
}

// flip changes one byte in the middle of a file.
func flip(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	b[len(b)/2] ^= 0x20
	require.NoError(t, os.WriteFile(path, b, 0o644))
}

// writeTar writes n samples named prefix00.txt on, their bytes fill
// repeated, to w.
func writeTar(t *testing.T, w io.Writer, prefix string, n int, fill string) {
	t.Helper()
	tw := tar.NewWriter(w)
	for i := range n {
		data := []byte(strings.Repeat(fill, 10+i))
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("%s%02d.txt", prefix, i), Mode: 0o644, Size: int64(len(data))}))
		_, err := tw.Write(data)
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
}

// kill -9 of the process downloading into the cache: another process of
// the node takes over, and no partial copy is ever read (the digest of
// every sample, in order, is that of a run without the cache).
func TestS3CacheDownloaderKilled(t *testing.T) {
	f := newCacheFixture(t, 1)
	plain := f.iterate(t)
	bin := gdsloadBinary(t)
	// 30 KB/s from MinIO: each 7 KB shard takes a quarter of a second.
	px := toxitest.New(t, strings.TrimPrefix(f.mc.Endpoint(), "http://"))
	px.Add("slow", "bandwidth", "downstream", map[string]any{"rate": 30})
	dir := t.TempDir()
	start := func(out io.Writer) *exec.Cmd {
		cmd := exec.Command(bin, "iterate", "--json", "--checksum", "sha256", "--cache", dir, "s3://dset/wds/")
		cmd.Env = append(os.Environ(), "AWS_ENDPOINT_URL_S3=http://"+px.Addr())
		cmd.Stdout, cmd.Stderr = out, os.Stderr
		require.NoError(t, cmd.Start())
		return cmd
	}
	victim := start(io.Discard)
	t.Cleanup(func() { _ = victim.Process.Kill() })
	deadline := time.Now().Add(30 * time.Second)
	var partial string // the entry the victim is writing
	for {
		tmp, err := filepath.Glob(filepath.Join(dir, "tmp", "*"))
		require.NoError(t, err)
		if len(tmp) > 0 {
			partial, _, _ = strings.Cut(filepath.Base(tmp[0]), ".")
			break
		}
		require.True(t, time.Now().Before(deadline), "the first process never started a download")
		time.Sleep(5 * time.Millisecond)
	}
	var out bytes.Buffer
	before := f.traffic(t)
	taker := start(&out)
	require.NoError(t, victim.Process.Signal(syscall.SIGKILL))
	_ = victim.Wait()
	require.NoError(t, taker.Wait())
	got := f.parse(t, out.String(), before)
	assert.Equal(t, plain.keys, got.keys)
	assert.Equal(t, plain.sha256, got.sha256, "every sample as in the store")
	assert.Positive(t, got.cache.Misses, "the second process downloaded what the first left")
	tmp, err := filepath.Glob(filepath.Join(dir, "tmp", "*"))
	require.NoError(t, err)
	assert.Empty(t, tmp, "the killed process's partial file was removed")
	assert.FileExists(t, filepath.Join(dir, "entries", partial+".data"), "the entry the killed process was writing was written by the other")
	_, stderr, code := run(t, "cache", "verify", "--cache", dir)
	assert.Equal(t, 0, code, stderr)
}

// An object uploaded in parts, as the AWS CLI uploads large files, is
// checked against its multipart ETag (the MD5 of its parts' MD5s) as it
// is cached.
func TestS3CacheMultipartObject(t *testing.T) {
	t.Setenv(cacheEnv, "")
	mc := miniotest.StartForTest(t, 1)
	mc.SetEnv(t)
	ctx := context.Background()
	require.NoError(t, mc.MakeBucket(ctx, "big"))
	data := randomBytes(11<<20+7, 5)
	etag, err := mc.PutMultipart(ctx, "big", "blob.bin", data, 5<<20)
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(etag, `-3"`), "a 3-part ETag: %s", etag)
	dir := t.TempDir()
	out, stderr, code := run(t, "load", "--to", "host", "--checksum", "sha256", "--json", "--cache", dir, "s3://big/blob.bin")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, sha256Hex(data))
	out, stderr, code = run(t, "cache", "ls", "--json", "--cache", dir)
	require.Equal(t, 0, code, stderr)
	var ls struct {
		Entries []cache.Entry `json:"entries"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &ls))
	require.Len(t, ls.Entries, 1)
	assert.Equal(t, "etag-multipart-md5", ls.Entries[0].Verified)
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
