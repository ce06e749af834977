package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// iterateOutput splits `iterate --json` output into its sample lines
// (verbatim) and the summary's state fingerprint.
func iterateOutput(t *testing.T, stdout string) (lines []string, fingerprint string) {
	t.Helper()
	all := strings.Split(strings.TrimSpace(stdout), "\n")
	require.NotEmpty(t, all)
	var sum iterateSummary
	require.NoError(t, json.Unmarshal([]byte(all[len(all)-1]), &sum), "summary line %q", all[len(all)-1])
	for _, l := range all[:len(all)-1] {
		var s sampleLine
		require.NoError(t, json.Unmarshal([]byte(l), &s), "sample line %q", l)
		require.NotEmpty(t, s.Key, l)
	}
	return all[:len(all)-1], sum.State.Fingerprint
}

// TestIterateRemoteMatchesLocal serves a WebDataset with `gdsload serve`
// (a real process) and checks that iterating it through rdmafs:// yields
// exactly the samples, in exactly the order, that iterating the same files
// locally yields: for every kind of source (a directory with a manifest,
// the manifest file, a directory without one, a brace pattern, one shard),
// for one rank alone and for both ranks of two. --verify checks every
// shard read over the network against the manifest's SHA-256.
func TestIterateRemoteMatchesLocal(t *testing.T) {
	const token = "iterate-token-0123456789abcdef"
	root := writeShards(t, 7, 5, 9, 4, 6) // 31 samples
	// The manifest is written before raw/ exists: manifest lists the
	// shards of subfolders too.
	_, stderr, code := run(t, "manifest", root)
	require.Equal(t, 0, code, stderr)
	raw := filepath.Join(root, "raw") // the same shards, no manifest
	require.NoError(t, os.Mkdir(raw, 0o755))
	for _, n := range []string{"shard-0.tar", "shard-1.tar", "shard-2.tar", "shard-3.tar", "shard-4.tar"} {
		b, err := os.ReadFile(filepath.Join(root, n))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(raw, n), b, 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(raw, "README.txt"), []byte("not a shard"), 0o644))

	addr := startServer(t, root, token)
	tok := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tok, []byte(token+"\n"), 0o600))
	url := "rdmafs://" + addr + "/"

	cases := []struct {
		name          string
		local, remote string
		samples       int
		flags         []string
	}{
		{"manifest directory", root, url, 31, nil},
		{"manifest directory, sample shuffle, two workers", root, url, 31, []string{"--shuffle-buffer", "1KiB", "--workers", "2"}},
		{"manifest file", filepath.Join(root, "index.json"), url + "index.json", 31, nil},
		{"directory without manifest", raw, url + "raw/", 31, nil},
		{"brace pattern", filepath.Join(root, "shard-{1..3}.tar"), url + "shard-{1..3}.tar", 18, nil},
		{"single shard", filepath.Join(raw, "shard-2.tar"), url + "raw/shard-2.tar", 9, nil},
	}
	places := [][]string{nil, {"--rank", "0", "--world-size", "2"}, {"--rank", "1", "--world-size", "2"}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var ranks [][]string
			for i, place := range places {
				args := append(append([]string{"iterate", "--json", "--seed", "3", "--verify"}, c.flags...), place...)
				out, stderr, code := run(t, append(args, c.local)...)
				require.Equal(t, 0, code, "local: %s", stderr)
				want, wantFP := iterateOutput(t, out)
				out, stderr, code = run(t, append(args, "--token-file", tok, "--connections", "2", c.remote)...)
				require.Equal(t, 0, code, "remote: %s", stderr)
				got, gotFP := iterateOutput(t, out)
				require.Equal(t, want, got, "samples of %s differ from those of %s (%v)", c.remote, c.local, place)
				require.Equal(t, wantFP, gotFP, "dataset fingerprint")
				if i == 0 {
					require.Len(t, got, c.samples)
				} else {
					ranks = append(ranks, got)
				}
			}
			// The two ranks split the dataset: same count, different samples.
			require.Equal(t, len(ranks[0]), len(ranks[1]))
			require.GreaterOrEqual(t, 2*len(ranks[0]), c.samples)
			require.False(t, slices.Equal(ranks[0], ranks[1]))
		})
	}

	t.Run("errors", func(t *testing.T) {
		require.NoError(t, os.Mkdir(filepath.Join(root, "empty"), 0o755))
		for _, e := range []struct{ source, want string }{
			{url + "missing/", "not found"},
			{url + "empty", "no shards"},
			{url + "shard-{7..8}.tar", "not found"},
			{"rdmafs:///x", "no host"},
		} {
			_, stderr, code := run(t, "iterate", "--token-file", tok, e.source)
			require.NotEqual(t, 0, code, e.source)
			require.Contains(t, strings.ToLower(stderr), e.want, e.source)
		}
		bad := filepath.Join(t.TempDir(), "bad-token")
		require.NoError(t, os.WriteFile(bad, []byte("wrong-token-0123456789abcdef\n"), 0o600))
		_, stderr, code := run(t, "iterate", "--token-file", bad, url)
		require.Equal(t, 1, code)
		require.Contains(t, stderr, "auth")
	})
}
