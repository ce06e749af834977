package webdataset

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gdsload/gdsload/internal/durable"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestManifestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	plain := goTar(t, testMembers(true))
	shards := map[string][]byte{
		"s-000.tar":     plain,
		"s-001.tar.gz":  compressWith(t, "gzip", plain),
		"s-002.tar.zst": compressWith(t, "zstd", plain),
		"notes.txt":     []byte("not a shard"),
	}
	for name, b := range shards {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o644))
	}
	var progressed atomic.Int64
	m, err := BuildManifest(context.Background(), dir, WithProgress(func(n int64) { progressed.Add(n) }))
	require.NoError(t, err)
	names, total, err := ShardFiles(dir)
	assert.NoError(t, err, "ShardFiles = %q, %d, %v; want the 3 shards and their total size", names, total, err)
	assert.Len(t, names, 3, "ShardFiles = %q, %d, %v; want the 3 shards and their total size", names, total, err)
	assert.Equal(t, int64(len(plain)+len(shards["s-001.tar.gz"])+len(shards["s-002.tar.zst"])), total, "ShardFiles = %q, %d, %v; want the 3 shards and their total size", names, total, err)
	assert.EqualValues(t, total, progressed.Load(), "progress reported %d bytes, the shards hold %d", progressed.Load(), total)
	want := expectSamples(testMembers(true))
	var sampleBytes int64
	for _, s := range want {
		sampleBytes += s.Size()
	}
	require.Len(t, m.Shards, 3, "shards %+v, want the three shards in name order", m.Shards)
	require.EqualValues(t, "s-000.tar", m.Shards[0].Name, "shards %+v, want the three shards in name order", m.Shards)
	require.EqualValues(t, "s-002.tar.zst", m.Shards[2].Name, "shards %+v, want the three shards in name order", m.Shards)
	for _, e := range m.Shards {
		b := shards[e.Name]
		sum := sha256.Sum256(b)
		msg := fmt.Sprintf("entry %+v; want %d samples, %d bytes, sample bytes %d, sha %x", e, len(want), len(b), sampleBytes, sum)
		assert.Equal(t, int64(len(want)), e.Samples, msg)
		assert.Equal(t, int64(len(b)), e.Bytes, msg)
		assert.Equal(t, hex.EncodeToString(sum[:]), e.SHA256, msg)
		assert.Equal(t, sampleBytes, e.SampleBytes, msg)
		assert.NoError(t, VerifyShard(filepath.Join(dir, e.Name), e), "VerifyShard(%s)", e.Name)
	}
	require.NoError(t, WriteManifest(context.Background(), dir, m))
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		assert.False(t, strings.HasSuffix(e.Name(), ".tmp"), "temporary file %s left behind", e.Name())
		assert.False(t, durable.IsTempName(e.Name()), "temporary file %s left behind", e.Name())
	}
	back, err := ReadManifest(dir)
	require.NoError(t, err)
	written := m.Shards[1]
	written.FirstKey, written.LastKey = "", "" // not written
	require.Len(t, back.Shards, 3, "read back %+v, wrote %+v", back.Shards, m.Shards)
	require.EqualValues(t, written, back.Shards[1], "read back %+v, wrote %+v", back.Shards, m.Shards)
}

func TestVerifyShardNamesTheBadShard(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "s-9.tar")
	data := goTar(t, testMembers(false))
	require.NoError(t, os.WriteFile(p, data, 0o644))
	e, err := ScanShard(context.Background(), p)
	require.NoError(t, err)
	data[600] ^= 1
	require.NoError(t, os.WriteFile(p, data, 0o644))
	err = VerifyShard(p, e)
	assert.ErrorIs(t, err, ErrShardChecksum, "flipped bit: %v, want ErrShardChecksum naming s-9.tar", err)
	assert.ErrorContains(t, err, "s-9.tar", "flipped bit: %v, want ErrShardChecksum naming s-9.tar", err)
	err = VerifyShardBytes(data, e)
	assert.ErrorIs(t, err, ErrShardChecksum, "VerifyShardBytes flipped bit")
	require.NoError(t, os.WriteFile(p, data[:1024], 0o644))
	err = VerifyShard(p, e)
	assert.ErrorIs(t, err, ErrShardSize, "truncated: %v, want ErrShardSize naming s-9.tar", err)
	assert.ErrorContains(t, err, "s-9.tar", "truncated: %v, want ErrShardSize naming s-9.tar", err)
}

func TestManifestValidate(t *testing.T) {
	good := ShardEntry{Name: "a.tar", SHA256: strings.Repeat("ab", 32)}
	for name, m := range map[string]Manifest{
		"format":    {Format: "tfrecord", Version: 1},
		"version":   {Format: "webdataset", Version: 2},
		"dotdot":    {Format: "webdataset", Version: 1, Shards: []ShardEntry{{Name: "../a.tar", SHA256: good.SHA256}}},
		"absolute":  {Format: "webdataset", Version: 1, Shards: []ShardEntry{{Name: "/a.tar", SHA256: good.SHA256}}},
		"unclean":   {Format: "webdataset", Version: 1, Shards: []ShardEntry{{Name: "x/./a.tar", SHA256: good.SHA256}}},
		"duplicate": {Format: "webdataset", Version: 1, Shards: []ShardEntry{good, good}},
		"negative":  {Format: "webdataset", Version: 1, Shards: []ShardEntry{{Name: "a.tar", Samples: -1, SHA256: good.SHA256}}},
		"sha":       {Format: "webdataset", Version: 1, Shards: []ShardEntry{{Name: "a.tar", SHA256: "xyz"}}},
		"crc":       {Format: "webdataset", Version: 1, Shards: []ShardEntry{{Name: "a.tar", SHA256: good.SHA256, CRC32C: "12345"}}},
		"crc hex":   {Format: "webdataset", Version: 1, Shards: []ShardEntry{{Name: "a.tar", SHA256: good.SHA256, CRC32C: "1234567g"}}},
	} {
		err := m.Validate()
		assert.Error(t, err, "%s: manifest %+v accepted", name, m)
	}
	ok := Manifest{Format: "webdataset", Version: 1, Shards: []ShardEntry{good, {Name: "sub/b.tar", SHA256: good.SHA256, CRC32C: "0123abcd"}}}
	assert.NoError(t, ok.Validate(), "valid manifest refused")
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, ManifestName), []byte(`{"format":"webdataset","version":1,"shards":[{"name":"../x.tar"}]}`), 0o644))
	_, err := ReadManifest(dir)
	assert.Error(t, err, "ReadManifest of a bad manifest: %v, want an error naming index.json", err)
	assert.ErrorContains(t, err, "index.json", "ReadManifest of a bad manifest: %v, want an error naming index.json", err)
}

func TestBuildManifestFailsOnCorruptShard(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ok.tar"), goTar(t, testMembers(false)), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad.tar.zst"), []byte("\x28\xb5\x2f\xfdgarbage"), 0o644))
	_, err := BuildManifest(context.Background(), dir)
	require.Error(t, err, "error %v, want one naming bad.tar.zst", err)
	require.ErrorContains(t, err, "bad.tar.zst", "error %v, want one naming bad.tar.zst", err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = BuildManifest(ctx, dir)
	require.ErrorIs(t, err, context.Canceled, "cancelled")
}

// FuzzDecodeManifest: any bytes give a manifest or an error; an accepted
// manifest names only clean local paths, once each, and survives a round
// trip through JSON unchanged.
func FuzzDecodeManifest(f *testing.F) {
	sum := strings.Repeat("ab", 32)
	f.Add([]byte(`{"format":"webdataset","version":1,"shards":[{"name":"a.tar","bytes":10,"samples":1,"sha256":"` + sum + `"}]}`))
	f.Add([]byte(`{"format":"webdataset","version":1,"shards":[{"name":"../a.tar","bytes":10,"samples":1,"sha256":"` + sum + `"}]}`))
	f.Add([]byte(`{"format":"webdataset","version":1,"shards":[{"name":"d/a.tar","bytes":-1,"sha256":"` + sum + `"},{"name":"d/a.tar"}]}`))
	f.Add([]byte(`{"format":"webdataset","version":2}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeManifest(b, "fuzz.json")
		if err != nil {
			require.ErrorContains(t, err, "fuzz.json", "error %q does not name the manifest", err)
			return
		}
		seen := map[string]bool{}
		for _, s := range m.Shards {
			require.True(t, filepath.IsLocal(s.Name), "accepted entry %+v", s)
			require.False(t, seen[s.Name], "accepted entry %+v", s)
			require.GreaterOrEqual(t, s.Bytes, int64(0), "accepted entry %+v", s)
			require.Len(t, s.SHA256, 64, "accepted entry %+v", s)
			seen[s.Name] = true
		}
		again, err := json.Marshal(m)
		require.NoError(t, err)
		m2, err := DecodeManifest(again, "again.json")
		require.NoError(t, err, "round trip: %+v, %v; want %+v", m2, err, m)
		require.Equal(t, m2, m, "round trip: %+v, %v; want %+v", m2, err, m)
	})
}

// A manifest written by another tool may spell digests in uppercase hex:
// they still verify.
func TestManifestUppercaseDigest(t *testing.T) {
	data := []byte("shard bytes")
	sum := sha256.Sum256(data)
	upper := strings.ToUpper(hex.EncodeToString(sum[:]))
	m, err := DecodeManifest([]byte(`{"format":"webdataset","version":1,"shards":[{"name":"a.tar","bytes":11,"sha256":"`+upper+`"}]}`), "m.json")
	require.NoError(t, err)
	assert.NoError(t, VerifyShardBytes(data, m.Shards[0]), "uppercase digest")
}

// TestScanShardBytesMatchesScanShard: the in-memory scan (what Open uses
// without a manifest) counts what the streamed scan (what manifest
// writes) counts, on tars GNU tar and Python write in every format,
// plain, gzip and zstd, and fails where it fails.
func TestScanShardBytesMatchesScanShard(t *testing.T) {
	ctx := context.Background()
	dec, err := NewDecompressor(0, 0)
	require.NoError(t, err)
	defer dec.Close()
	var buf []byte
	check := func(name string, data []byte) {
		t.Helper()
		want, werr := ScanShardReader(ctx, bytes.NewReader(data), name)
		var got ShardEntry
		got, buf, err = ScanShardBytes(ctx, data, name, dec, buf)
		require.EqualValues(t, (err == nil), (werr == nil), "%s: streamed scan: %v; in memory: %v", name, werr, err)
		if werr != nil {
			return
		}
		require.EqualValues(t, want, got, "%s: in memory %+v, streamed %+v", name, got, want)
		got, buf, _ = ScanShardBytes(ctx, data, name, dec, buf, WithSHA256(false))
		want.SHA256 = ""
		require.Equal(t, want, got, "%s without SHA-256: %+v, want %+v", name, got, want)
	}
	for _, format := range []string{"ustar", "gnu", "pax"} {
		plain := gnuTar(t, format, testMembers(format != "ustar"))
		check(format+".tar", plain)
		check(format+".tar.gz", compressWith(t, "gzip", plain))
		check(format+".tar.zst", compressWith(t, "zstd", plain))
		check(format+".truncated.tar", plain[:len(plain)/2+100])
	}
	check("python.tar", pyTar(t, "PAX_FORMAT", testMembers(true)))
	check("flip.tar.gz", corruptShard(t, "gzip"))
	check("flip.tar.zst", corruptShard(t, "zstd"))
}

func TestVerifyShardBytesQuick(t *testing.T) {
	data := goTar(t, testMembers(false))
	e, err := ScanShardReader(context.Background(), bytes.NewReader(data), "q.tar")
	require.NoError(t, err)
	bad := bytes.Clone(data)
	bad[700] ^= 1
	for _, tt := range []struct {
		name string
		e    ShardEntry
		data []byte
		want error
	}{
		{"both digests", e, data, nil},
		{"damage, CRC-32C", e, bad, ErrShardChecksum},
		{"damage, SHA-256 only", ShardEntry{Name: e.Name, Bytes: e.Bytes, SHA256: e.SHA256}, bad, ErrShardChecksum},
		{"damage, no digest: size only", ShardEntry{Name: e.Name, Bytes: e.Bytes}, bad, nil},
		{"wrong SHA-256, CRC-32C right", ShardEntry{Name: e.Name, Bytes: e.Bytes, SHA256: strings.Repeat("0", 64), CRC32C: e.CRC32C}, data, nil},
		{"short", e, data[:len(data)-1], ErrShardSize},
	} {
		err := VerifyShardBytesQuick(tt.data, tt.e)
		assert.ErrorIs(t, err, tt.want, "%s: %v, want %v", tt.name, err, tt.want)
		assert.Equal(t, (err == nil), (tt.want == nil), "%s: %v, want %v", tt.name, err, tt.want)
	}
	// The full check takes both digests.
	err = VerifyShardBytes(data, ShardEntry{Name: e.Name, Bytes: e.Bytes, SHA256: strings.Repeat("0", 64), CRC32C: e.CRC32C})
	assert.ErrorIs(t, err, ErrShardChecksum, "VerifyShardBytes with a wrong SHA-256")
	err = VerifyShardBytes(data, ShardEntry{Name: e.Name, Bytes: e.Bytes, SHA256: e.SHA256, CRC32C: "00000000"})
	assert.ErrorIs(t, err, ErrShardChecksum, "VerifyShardBytes with a wrong CRC-32C")
}

// TestShardErrorHandler: a corrupt or truncated shard fails a manifest
// build by default; with a handler that says to go on (WebDataset's
// warn_and_continue) the build leaves it out and the handler names it.
func TestShardErrorHandler(t *testing.T) {
	dir := t.TempDir()
	plain := goTar(t, testMembers(false))
	files := map[string][]byte{
		"a-ok.tar":          plain,
		"b-trunc.tar":       plain[:len(plain)/3+100],
		"c-garbage.tar.zst": []byte("\x28\xb5\x2f\xfdgarbage"),
		"d-flip.tar.gz":     corruptShard(t, "gzip"),
		"e-ok.tar.zst":      compressWith(t, "zstd", plain),
	}
	for name, b := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o644))
	}
	ctx := context.Background()
	_, err := BuildManifest(ctx, dir)
	require.Error(t, err, "corrupt shards accepted without a handler")
	var warnings bytes.Buffer
	m, err := BuildManifest(ctx, dir, WithShardErrorHandler(WarnAndContinue(&warnings)))
	require.NoError(t, err)
	require.Len(t, m.Shards, 2, "kept %+v, want the two good shards", m.Shards)
	require.EqualValues(t, "a-ok.tar", m.Shards[0].Name, "kept %+v, want the two good shards", m.Shards)
	require.EqualValues(t, "e-ok.tar.zst", m.Shards[1].Name, "kept %+v, want the two good shards", m.Shards)
	for _, bad := range []string{"b-trunc.tar", "c-garbage.tar.zst", "d-flip.tar.gz"} {
		assert.Contains(t, warnings.String(), "skipping shard "+bad, "no warning for %s in:\n%s", bad, warnings.String())
	}
	n := strings.Count(warnings.String(), "\n")
	assert.Equal(t, 3, n, "%d warning lines, want 3:\n%s", n, warnings.String())
	// A handler that stops is obeyed, with its error.
	stop := errors.New("stop here")
	_, err = BuildManifest(ctx, dir, WithShardErrorHandler(func(string, error) error { return stop }))
	require.ErrorIs(t, err, stop, "a stopping handler")
}

// TestSplitSampleAcrossShards: a sample whose members straddle two shards
// is read as two samples (each shard alone), marked in the manifest, warned
// of, and counted once in the manifest's total.
func TestSplitSampleAcrossShards(t *testing.T) {
	dir := t.TempDir()
	a := goTar(t, []tmember{{Name: "k1.jpg", Data: []byte("1")}, {Name: "k1.cls", Data: []byte("1")}, {Name: "k2.jpg", Data: []byte("2")}})
	b := goTar(t, []tmember{{Name: "k2.cls", Data: []byte("2")}, {Name: "k3.jpg", Data: []byte("3")}, {Name: "k3.cls", Data: []byte("3")}})
	c := goTar(t, []tmember{{Name: "k4.jpg", Data: []byte("4")}})
	for name, data := range map[string][]byte{"s-0.tar": a, "s-1.tar": b, "s-2.tar": c} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o644))
	}
	ctx := context.Background()
	m, err := BuildManifest(ctx, dir)
	require.NoError(t, err)
	require.False(t, m.Shards[0].SplitFirst, "split flags %v %v %v, want only s-1.tar's", m.Shards[0].SplitFirst, m.Shards[1].SplitFirst, m.Shards[2].SplitFirst)
	require.True(t, m.Shards[1].SplitFirst, "split flags %v %v %v, want only s-1.tar's", m.Shards[0].SplitFirst, m.Shards[1].SplitFirst, m.Shards[2].SplitFirst)
	require.False(t, m.Shards[2].SplitFirst, "split flags %v %v %v, want only s-1.tar's", m.Shards[0].SplitFirst, m.Shards[1].SplitFirst, m.Shards[2].SplitFirst)
	assert.EqualValues(t, 5, m.Shards[0].Samples+m.Shards[1].Samples+m.Shards[2].Samples, "shard counts %d+%d+%d (the parts as read), total %d; want 5 parts, 4 samples", m.Shards[0].Samples, m.Shards[1].Samples, m.Shards[2].Samples, m.Samples())
	assert.EqualValues(t, 4, m.Samples(), "shard counts %d+%d+%d (the parts as read), total %d; want 5 parts, 4 samples", m.Shards[0].Samples, m.Shards[1].Samples, m.Shards[2].Samples, m.Samples())
	w := m.Warnings()
	if assert.Len(t, w, 1, "warnings %q, want one naming s-0.tar and s-1.tar", w) {
		if assert.Contains(t, w[0], "s-0.tar", "warnings %q, want one naming s-0.tar and s-1.tar", w) {
			assert.Contains(t, w[0], "s-1.tar", "warnings %q, want one naming s-0.tar and s-1.tar", w)
		}
	}
	require.NoError(t, WriteManifest(ctx, dir, m))
	back, err := ReadManifest(dir)
	require.NoError(t, err, "read back: %+v, %v", back, err)
	require.True(t, back.Shards[1].SplitFirst, "read back: %+v, %v", back, err)
	require.EqualValues(t, 4, back.Samples(), "read back: %+v, %v", back, err)
}
