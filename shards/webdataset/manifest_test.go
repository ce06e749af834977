package webdataset

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gdsload/gdsload/internal/durable"
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
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var progressed atomic.Int64
	m, err := BuildManifest(context.Background(), dir, WithProgress(func(n int64) { progressed.Add(n) }))
	if err != nil {
		t.Fatal(err)
	}
	names, total, err := ShardFiles(dir)
	if err != nil || len(names) != 3 || total != int64(len(plain)+len(shards["s-001.tar.gz"])+len(shards["s-002.tar.zst"])) {
		t.Errorf("ShardFiles = %q, %d, %v; want the 3 shards and their total size", names, total, err)
	}
	if progressed.Load() != total {
		t.Errorf("progress reported %d bytes, the shards hold %d", progressed.Load(), total)
	}
	want := expectSamples(testMembers(true))
	var sampleBytes int64
	for _, s := range want {
		sampleBytes += s.Size()
	}
	if len(m.Shards) != 3 || m.Shards[0].Name != "s-000.tar" || m.Shards[2].Name != "s-002.tar.zst" {
		t.Fatalf("shards %+v, want the three shards in name order", m.Shards)
	}
	for _, e := range m.Shards {
		b := shards[e.Name]
		sum := sha256.Sum256(b)
		if e.Samples != int64(len(want)) || e.Bytes != int64(len(b)) || e.SHA256 != hex.EncodeToString(sum[:]) || e.SampleBytes != sampleBytes {
			t.Errorf("entry %+v; want %d samples, %d bytes, sample bytes %d, sha %x", e, len(want), len(b), sampleBytes, sum)
		}
		if err := VerifyShard(filepath.Join(dir, e.Name), e); err != nil {
			t.Errorf("VerifyShard(%s): %v", e.Name, err)
		}
	}
	if err := WriteManifest(context.Background(), dir, m); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".tmp") || durable.IsTempName(e.Name()) {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
	back, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	written := m.Shards[1]
	written.FirstKey, written.LastKey = "", "" // not written
	if len(back.Shards) != 3 || back.Shards[1] != written {
		t.Fatalf("read back %+v, wrote %+v", back.Shards, m.Shards)
	}
}

func TestVerifyShardNamesTheBadShard(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "s-9.tar")
	data := goTar(t, testMembers(false))
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := ScanShard(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	data[600] ^= 1
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := VerifyShard(p, e); !errors.Is(err, ErrShardChecksum) || !strings.Contains(err.Error(), "s-9.tar") {
		t.Errorf("flipped bit: %v, want ErrShardChecksum naming s-9.tar", err)
	}
	if err := VerifyShardBytes(data, e); !errors.Is(err, ErrShardChecksum) {
		t.Errorf("VerifyShardBytes flipped bit: %v", err)
	}
	if err := os.WriteFile(p, data[:1024], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := VerifyShard(p, e); !errors.Is(err, ErrShardSize) || !strings.Contains(err.Error(), "s-9.tar") {
		t.Errorf("truncated: %v, want ErrShardSize naming s-9.tar", err)
	}
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
		if err := m.Validate(); err == nil {
			t.Errorf("%s: manifest %+v accepted", name, m)
		}
	}
	ok := Manifest{Format: "webdataset", Version: 1, Shards: []ShardEntry{good, {Name: "sub/b.tar", SHA256: good.SHA256, CRC32C: "0123abcd"}}}
	if err := ok.Validate(); err != nil {
		t.Errorf("valid manifest refused: %v", err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ManifestName), []byte(`{"format":"webdataset","version":1,"shards":[{"name":"../x.tar"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadManifest(dir); err == nil || !strings.Contains(err.Error(), "index.json") {
		t.Errorf("ReadManifest of a bad manifest: %v, want an error naming index.json", err)
	}
}

func TestBuildManifestFailsOnCorruptShard(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ok.tar"), goTar(t, testMembers(false)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.tar.zst"), []byte("\x28\xb5\x2f\xfdgarbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := BuildManifest(context.Background(), dir); err == nil || !strings.Contains(err.Error(), "bad.tar.zst") {
		t.Fatalf("error %v, want one naming bad.tar.zst", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := BuildManifest(ctx, dir); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
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
			if !strings.Contains(err.Error(), "fuzz.json") {
				t.Fatalf("error %q does not name the manifest", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, s := range m.Shards {
			if !filepath.IsLocal(s.Name) || seen[s.Name] || s.Bytes < 0 || len(s.SHA256) != 64 {
				t.Fatalf("accepted entry %+v", s)
			}
			seen[s.Name] = true
		}
		again, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		m2, err := DecodeManifest(again, "again.json")
		if err != nil || !reflect.DeepEqual(m, m2) {
			t.Fatalf("round trip: %+v, %v; want %+v", m2, err, m)
		}
	})
}

// A manifest written by another tool may spell digests in uppercase hex:
// they still verify.
func TestManifestUppercaseDigest(t *testing.T) {
	data := []byte("shard bytes")
	sum := sha256.Sum256(data)
	upper := strings.ToUpper(hex.EncodeToString(sum[:]))
	m, err := DecodeManifest([]byte(`{"format":"webdataset","version":1,"shards":[{"name":"a.tar","bytes":11,"sha256":"`+upper+`"}]}`), "m.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := VerifyShardBytes(data, m.Shards[0]); err != nil {
		t.Errorf("uppercase digest: %v", err)
	}
}

// TestScanShardBytesMatchesScanShard: the in-memory scan (what Open uses
// without a manifest) counts what the streamed scan (what manifest
// writes) counts, on tars GNU tar and Python write in every format,
// plain, gzip and zstd, and fails where it fails.
func TestScanShardBytesMatchesScanShard(t *testing.T) {
	ctx := context.Background()
	dec, err := NewDecompressor(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	var buf []byte
	check := func(name string, data []byte) {
		t.Helper()
		want, werr := ScanShardReader(ctx, bytes.NewReader(data), name)
		var got ShardEntry
		got, buf, err = ScanShardBytes(ctx, data, name, dec, buf)
		if (werr == nil) != (err == nil) {
			t.Fatalf("%s: streamed scan: %v; in memory: %v", name, werr, err)
		}
		if werr != nil {
			return
		}
		if got != want {
			t.Fatalf("%s: in memory %+v, streamed %+v", name, got, want)
		}
		got, buf, _ = ScanShardBytes(ctx, data, name, dec, buf, WithSHA256(false))
		if want.SHA256 = ""; got != want {
			t.Fatalf("%s without SHA-256: %+v, want %+v", name, got, want)
		}
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
	if err != nil {
		t.Fatal(err)
	}
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
		if err := VerifyShardBytesQuick(tt.data, tt.e); !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}
	// The full check takes both digests.
	if err := VerifyShardBytes(data, ShardEntry{Name: e.Name, Bytes: e.Bytes, SHA256: strings.Repeat("0", 64), CRC32C: e.CRC32C}); !errors.Is(err, ErrShardChecksum) {
		t.Errorf("VerifyShardBytes with a wrong SHA-256: %v", err)
	}
	if err := VerifyShardBytes(data, ShardEntry{Name: e.Name, Bytes: e.Bytes, SHA256: e.SHA256, CRC32C: "00000000"}); !errors.Is(err, ErrShardChecksum) {
		t.Errorf("VerifyShardBytes with a wrong CRC-32C: %v", err)
	}
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
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	if _, err := BuildManifest(ctx, dir); err == nil {
		t.Fatal("corrupt shards accepted without a handler")
	}
	var warnings bytes.Buffer
	m, err := BuildManifest(ctx, dir, WithShardErrorHandler(WarnAndContinue(&warnings)))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Shards) != 2 || m.Shards[0].Name != "a-ok.tar" || m.Shards[1].Name != "e-ok.tar.zst" {
		t.Fatalf("kept %+v, want the two good shards", m.Shards)
	}
	for _, bad := range []string{"b-trunc.tar", "c-garbage.tar.zst", "d-flip.tar.gz"} {
		if !strings.Contains(warnings.String(), "skipping shard "+bad) {
			t.Errorf("no warning for %s in:\n%s", bad, warnings.String())
		}
	}
	if n := strings.Count(warnings.String(), "\n"); n != 3 {
		t.Errorf("%d warning lines, want 3:\n%s", n, warnings.String())
	}
	// A handler that stops is obeyed, with its error.
	stop := errors.New("stop here")
	if _, err := BuildManifest(ctx, dir, WithShardErrorHandler(func(string, error) error { return stop })); !errors.Is(err, stop) {
		t.Fatalf("a stopping handler: %v", err)
	}
}

// TestSplitSampleAcrossShards: a sample whose members straddle two shards
// is read as two samples (each shard alone), marked in the manifest, warned
// of, and counted once in the manifest's total (issue 16).
func TestSplitSampleAcrossShards(t *testing.T) {
	dir := t.TempDir()
	a := goTar(t, []tmember{{Name: "k1.jpg", Data: []byte("1")}, {Name: "k1.cls", Data: []byte("1")}, {Name: "k2.jpg", Data: []byte("2")}})
	b := goTar(t, []tmember{{Name: "k2.cls", Data: []byte("2")}, {Name: "k3.jpg", Data: []byte("3")}, {Name: "k3.cls", Data: []byte("3")}})
	c := goTar(t, []tmember{{Name: "k4.jpg", Data: []byte("4")}})
	for name, data := range map[string][]byte{"s-0.tar": a, "s-1.tar": b, "s-2.tar": c} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	m, err := BuildManifest(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Shards[0].SplitFirst || !m.Shards[1].SplitFirst || m.Shards[2].SplitFirst {
		t.Fatalf("split flags %v %v %v, want only s-1.tar's", m.Shards[0].SplitFirst, m.Shards[1].SplitFirst, m.Shards[2].SplitFirst)
	}
	if m.Shards[0].Samples+m.Shards[1].Samples+m.Shards[2].Samples != 5 || m.Samples() != 4 {
		t.Errorf("shard counts %d+%d+%d (the parts as read), total %d; want 5 parts, 4 samples",
			m.Shards[0].Samples, m.Shards[1].Samples, m.Shards[2].Samples, m.Samples())
	}
	w := m.Warnings()
	if len(w) != 1 || !strings.Contains(w[0], "s-0.tar") || !strings.Contains(w[0], "s-1.tar") {
		t.Errorf("warnings %q, want one naming s-0.tar and s-1.tar", w)
	}
	if err := WriteManifest(ctx, dir, m); err != nil {
		t.Fatal(err)
	}
	back, err := ReadManifest(dir)
	if err != nil || !back.Shards[1].SplitFirst || back.Samples() != 4 {
		t.Fatalf("read back: %+v, %v", back, err)
	}
}
