package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gdsload/gdsload/internal/miniotest"
	"github.com/gdsload/gdsload/internal/toxitest"
)

// The command line against a real MinIO (a separate process the test
// starts), with credentials, region and endpoint from the AWS environment
// as a user sets them: every verb that reads takes s3:// URLs.
func TestS3CommandLine(t *testing.T) {
	mc := miniotest.StartForTest(t, 1)
	mc.SetEnv(t)
	ctx := context.Background()
	require.NoError(t, mc.MakeBucket(ctx, "dset"))
	upload := func(dir, prefix string) {
		t.Helper()
		require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			_, err = mc.Put(ctx, "dset", prefix+filepath.ToSlash(rel), b)
			return err
		}))
	}
	// WebDataset shards with their manifest, and the same without one.
	wds := writeShards(t, 7, 5, 9, 4, 6) // 31 samples
	_, stderr, code := run(t, "manifest", wds)
	require.Equal(t, 0, code, stderr)
	upload(wds, "wds/")
	raw := t.TempDir()
	for i := range 5 {
		b, err := os.ReadFile(filepath.Join(wds, fmt.Sprintf("shard-%d.tar", i)))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(raw, fmt.Sprintf("shard-%d.tar", i)), b, 0o644))
	}
	upload(raw, "raw/")
	// A checkpoint and a folder of files to stage.
	ckpt, err := os.ReadFile("../../testdata/model.safetensors")
	require.NoError(t, err)
	_, err = mc.Put(ctx, "dset", "ckpt/model.safetensors", ckpt)
	require.NoError(t, err)
	files := map[string][]byte{}
	for i, n := range []int{9<<20 + 7, 1, 0, 70000, 4097} {
		name := fmt.Sprintf("run/part-%d.bin", i)
		files[name] = randomBytes(n, uint64(i))
		_, err := mc.Put(ctx, "dset", name, files[name])
		require.NoError(t, err)
	}

	t.Run("load", func(t *testing.T) {
		out, stderr, code := run(t, "load", "--to", "host", "--checksum", "sha256", "--json", "s3://dset/run/part-0.bin")
		require.Equal(t, 0, code, stderr)
		var res struct {
			Bytes int64 `json:"bytes"`
			Files []struct {
				Name   string `json:"name"`
				SHA256 string `json:"sha256"`
			} `json:"files"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &res))
		require.Equal(t, int64(len(files["run/part-0.bin"])), res.Bytes)
		require.Equal(t, "s3://dset/run/part-0.bin", res.Files[0].Name)
		require.Equal(t, sha(files["run/part-0.bin"]), res.Files[0].SHA256)

		out, stderr, code = run(t, "load", "--to", "host", "--checksum", "sha256", "--json", "s3://dset/run/")
		require.Equal(t, 0, code, stderr)
		require.NoError(t, json.Unmarshal([]byte(out), &res))
		require.Len(t, res.Files, len(files))
		for _, f := range res.Files {
			require.Equal(t, sha(files[strings.TrimPrefix(f.Name, "s3://dset/")]), f.SHA256, f.Name)
		}

		// Chunks: by default one 8 MiB ranged GET each (the range size the
		// object prefers), or the size asked for.
		_, err := mc.Put(ctx, "dset", "big/obj", bytes.Repeat([]byte("gdsload"), 3<<20)) // 21 MiB
		require.NoError(t, err)
		for _, tc := range []struct {
			flags  []string
			chunks int
		}{{nil, 3}, {[]string{"--chunk-size", "auto"}, 3}, {[]string{"--chunk-size", "4MiB"}, 6}} {
			args := append([]string{"load", "--to", "host", "--json", "s3://dset/big/obj"}, tc.flags...)
			out, stderr, code := run(t, args...)
			require.Equal(t, 0, code, stderr)
			var r struct{ Bytes, Chunks int64 }
			require.NoError(t, json.Unmarshal([]byte(out), &r))
			require.Equal(t, int64(21<<20), r.Bytes, tc.flags)
			require.EqualValues(t, tc.chunks, r.Chunks, tc.flags)
		}
	})

	t.Run("missing", func(t *testing.T) {
		for _, u := range []string{"s3://dset/run/nope.bin", "s3://dset/nope/", "s3://no-such-bucket/x"} {
			for _, verb := range [][]string{{"load", "--to", "host"}, {"inspect"}, {"iterate"}, {"stage"}} {
				args := append(slices.Clone(verb), u)
				if verb[0] == "stage" {
					args = append(args, t.TempDir())
				}
				_, stderr, code := run(t, args...)
				require.Equal(t, 1, code, "%v: %s", args, stderr)
				require.Contains(t, stderr, strings.TrimSuffix(u, "/"), "%v names the URL", args)
			}
		}
	})

	t.Run("wrong credentials", func(t *testing.T) {
		t.Setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
		_, stderr, code := run(t, "load", "--to", "host", "s3://dset/run/part-1.bin")
		require.Equal(t, 1, code, stderr)
		for _, want := range []string{"s3://dset/run/part-1.bin", mc.Endpoint(), "the environment (AWS_ACCESS_KEY_ID)", "access denied"} {
			require.Contains(t, stderr, want)
		}
	})

	t.Run("inspect", func(t *testing.T) {
		local, stderr, code := run(t, "inspect", "--json", "../../testdata/model.safetensors")
		require.Equal(t, 0, code, stderr)
		remote, stderr, code := run(t, "inspect", "--json", "s3://dset/ckpt/model.safetensors")
		require.Equal(t, 0, code, stderr)
		require.JSONEq(t, strings.ReplaceAll(local, "../../testdata/model.safetensors", "s3://dset/ckpt/model.safetensors"), remote)
		out, stderr, code := run(t, "inspect", "s3://dset/wds/shard-2.tar")
		require.Equal(t, 0, code, stderr)
		require.Contains(t, out, "9")
	})

	t.Run("bench", func(t *testing.T) {
		out, stderr, code := run(t, "bench", "--runs", "1", "--json", "s3://dset/run/part-0.bin")
		require.Equal(t, 0, code, stderr)
		require.Contains(t, out, `"loader"`)
	})

	t.Run("manifest", func(t *testing.T) {
		_, stderr, code := run(t, "manifest", "--verify", "s3://dset/wds/")
		require.Equal(t, 0, code, stderr)
		require.Contains(t, stderr, "verified s3://dset/wds/index.json: 5 shards, 31 samples")
		_, stderr, code = run(t, "manifest", "s3://dset/raw/")
		require.Equal(t, 2, code, "writing a manifest into a bucket is refused as usage: %s", stderr)
		// A shard replaced without its manifest entry is named.
		_, err := mc.Put(ctx, "dset", "bad/index.json", mustRead(t, filepath.Join(wds, "index.json")))
		require.NoError(t, err)
		for i := range 5 {
			b := mustRead(t, filepath.Join(wds, fmt.Sprintf("shard-%d.tar", i)))
			if i == 3 {
				b[100] ^= 1
			}
			_, err := mc.Put(ctx, "dset", fmt.Sprintf("bad/shard-%d.tar", i), b)
			require.NoError(t, err)
		}
		_, stderr, code = run(t, "manifest", "--verify", "s3://dset/bad/")
		require.Equal(t, 1, code, stderr)
		require.Contains(t, stderr, "shard-3.tar")
		// A load checks the shards against the manifest beside them too.
		_, stderr, code = run(t, "load", "--to", "host", "--checksum", "sha256", "s3://dset/bad/")
		require.Equal(t, 1, code, stderr)
		require.Contains(t, stderr, "shard-3.tar")
		_, stderr, code = run(t, "load", "--to", "host", "--checksum", "sha256", "s3://dset/wds/")
		require.Equal(t, 0, code, stderr)
	})

	t.Run("iterate at world size 2 and resume", func(t *testing.T) {
		for _, c := range []struct{ local, remote string }{{wds, "s3://dset/wds/"}, {raw, "s3://dset/raw/"}} {
			for r := range 2 {
				place := []string{"iterate", "--json", "--seed", "5", "--rank", fmt.Sprint(r), "--world-size", "2"}
				want, stderr, code := run(t, append(place, c.local)...)
				require.Equal(t, 0, code, stderr)
				got, stderr, code := run(t, append(place, c.remote)...)
				require.Equal(t, 0, code, stderr)
				wantLines, wantFP := iterateOutput(t, want)
				gotLines, gotFP := iterateOutput(t, got)
				require.Equal(t, wantLines, gotLines, "rank %d of %s", r, c.remote)
				require.Equal(t, wantFP, gotFP)

				// Stopped after 3 samples and resumed: the same samples.
				state := filepath.Join(t.TempDir(), "state.json")
				first, stderr, code := run(t, append(place, "--limit", "3", "--state-out", state, c.remote)...)
				require.Equal(t, 0, code, stderr)
				rest, stderr, code := run(t, append(place, "--resume", state, c.remote)...)
				require.Equal(t, 0, code, stderr)
				a, _ := iterateOutput(t, first)
				b, _ := iterateOutput(t, rest)
				require.Equal(t, wantLines, append(a, b...), "rank %d resumed", r)
			}
		}
	})

	t.Run("stage a prefix", func(t *testing.T) {
		dst := t.TempDir()
		_, stderr, code := run(t, "stage", "s3://dset/run/", dst)
		require.Equal(t, 0, code, stderr)
		for name, b := range files {
			require.Equal(t, b, mustRead(t, filepath.Join(dst, strings.TrimPrefix(name, "run/"))), name)
		}
		requireNoTemp(t, dst)
		// Resumable: a rerun copies nothing; a replaced object is staged again.
		out, stderr, code := run(t, "stage", "--json", "s3://dset/run/", dst)
		require.Equal(t, 0, code, stderr)
		require.Contains(t, out, `"copied": 0`)
		files["run/part-3.bin"] = randomBytes(70001, 33)
		_, err := mc.Put(ctx, "dset", "run/part-3.bin", files["run/part-3.bin"])
		require.NoError(t, err)
		out, stderr, code = run(t, "stage", "--json", "s3://dset/run/", dst)
		require.Equal(t, 0, code, stderr)
		require.Contains(t, out, `"copied": 1`)
		require.Equal(t, files["run/part-3.bin"], mustRead(t, filepath.Join(dst, "part-3.bin")))
	})

	t.Run("overwrite during a stage", func(t *testing.T) {
		// One worker reads the 2 MiB object in 8 chunks, each a GET that
		// toxiproxy delays by 300 ms: the object is replaced once the
		// stage has begun writing it, with most of its GETs still to come.
		_, err := mc.Put(ctx, "dset", "slow/blob.bin", randomBytes(2<<20, 98))
		require.NoError(t, err)
		px := toxitest.New(t, strings.TrimPrefix(mc.Endpoint(), "http://"))
		px.Add("slow", "latency", "upstream", map[string]any{"latency": 300})
		t.Setenv("AWS_ENDPOINT_URL_S3", "http://"+px.Addr())
		dst := t.TempDir()
		type result struct {
			stderr string
			code   int
		}
		done := make(chan result, 1)
		go func() {
			_, stderr, code := run(t, "stage", "--workers", "1", "--chunk-size", "256KiB", "s3://dset/slow/blob.bin", dst)
			done <- result{stderr, code}
		}()
		deadline := time.Now().Add(20 * time.Second)
		for !hasTemp(dst) {
			require.True(t, time.Now().Before(deadline), "the stage never started writing")
			time.Sleep(5 * time.Millisecond)
		}
		_, err = mc.Put(ctx, "dset", "slow/blob.bin", randomBytes(2<<20, 99))
		require.NoError(t, err)
		var res result
		select {
		case res = <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("the stage hangs after the overwrite")
		}
		require.Equal(t, 1, res.code, "nothing staged is a failure, not a partial stage: %s", res.stderr)
		require.Contains(t, res.stderr, "replaced or deleted after it was opened")
		t.Logf("exit %d: %s", res.code, res.stderr)
		require.NoFileExists(t, filepath.Join(dst, "blob.bin"), "nothing under the final name")
		requireNoTemp(t, dst)
	})
}

func randomBytes(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, uint64(n)))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// hasTemp reports whether a stage has a file under a temporary name (a
// leading dot) in dir.
func hasTemp(dir string) bool {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") && !e.IsDir() {
			return true
		}
	}
	return false
}

func requireNoTemp(t *testing.T, dir string) {
	t.Helper()
	require.False(t, hasTemp(dir), "a temporary file is left in %s", dir)
}
