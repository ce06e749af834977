package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gdsload/gdsload/internal/fakecuda"
)

// useFakeCUDA points the library search at the CUDA test double (which
// checks for leaks at the end of the test) and returns its control handle.
func useFakeCUDA(t *testing.T) *fakecuda.Control {
	t.Helper()
	s := fakecuda.Use(t)
	for k, v := range s.Env() {
		t.Setenv(k, v)
	}
	return s.Control
}

type loadJSON struct {
	Bytes  int64  `json:"bytes"`
	Path   string `json:"path"`
	Reason string `json:"reason"`
	Files  []struct {
		Name   string `json:"name"`
		Path   string `json:"path"`
		SHA256 string `json:"sha256"`
	} `json:"files"`
}

func TestLoadToGPUThroughTestDouble(t *testing.T) {
	ctl := useFakeCUDA(t)
	dir := t.TempDir()
	want := map[string]string{}
	for name, n := range map[string]int{"a.bin": 1, "b.bin": 4097, "c.bin": 2<<20 + 333} {
		p, sum := writeFile(t, dir, name, n)
		want[p] = sum
	}
	for _, tc := range []struct {
		mode, to, path, reason string
	}{
		{"nvfs", "gpu:0", "gds", "cuFile in nvfs mode"},
		{"p2pdma", "gpu", "gds", "cuFile in p2pdma mode"},
		{"compat", "gpu:0", "bounce", "gds refused: cuFile in compat mode"},
		{"nvfs", "auto", "gds", "cuFile in nvfs mode"},
	} {
		t.Run(tc.mode+"/"+tc.to, func(t *testing.T) {
			require.NoError(t, ctl.Do("reset"))
			require.NoError(t, ctl.Do("mode="+tc.mode))
			out, stderr, code := run(t, "load", "--to", tc.to, "--direct", "on", "--checksum", "sha256", "--json", "--chunk-size", "1M", "--workers", "3", dir)
			require.Equal(t, 0, code, stderr)
			var res loadJSON
			require.NoError(t, json.Unmarshal([]byte(out), &res))
			require.Equal(t, tc.path, res.Path)
			require.Contains(t, res.Reason, tc.reason)
			require.Len(t, res.Files, 3)
			for _, f := range res.Files {
				require.Equal(t, want[f.Name], f.SHA256, "bytes copied back from the GPU: %s", f.Name)
			}
			for _, c := range []string{"allocs", "pinned", "streams", "events", "handles", "driver_refs"} {
				require.Zero(t, ctl.Counter(c), "%s released after the load", c)
			}
		})
	}
}

func TestLoadToGPUBufferedFileIsBounced(t *testing.T) {
	ctl := useFakeCUDA(t)
	require.NoError(t, ctl.Do("mode=nvfs"))
	p, sum := writeFile(t, t.TempDir(), "x.bin", 1<<20+5)
	out, stderr, code := run(t, "load", "--to", "gpu:0", "--direct", "off", "--checksum", "sha256", "--json", p)
	require.Equal(t, 0, code, stderr)
	var res loadJSON
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Equal(t, "bounce", res.Path, "cuFile cannot read a buffered descriptor")
	require.Contains(t, res.Reason, "direct I/O off: cuFile needs O_DIRECT", "the library's reason names no flag")
	require.Equal(t, "bounce", res.Files[0].Path)
	require.Equal(t, sum, res.Files[0].SHA256)
}

func TestLoadToGPUFailures(t *testing.T) {
	ctl := useFakeCUDA(t)
	p, _ := writeFile(t, t.TempDir(), "x.bin", 3<<20)
	for _, tc := range []struct {
		name, fault, to string
		code            int
		msg             string
	}{
		{"no GPU insisted", "devices=0", "gpu:0", 1, "no GPU"},
		{"no such GPU", "", "gpu:7", 1, "no GPU"},
		{"out of device memory", "fault=oom", "gpu:0", 1, "free"},
		{"read error mid-file", "fault=read_at:1048576", "gpu:0", 1, filepath.Base(p)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, ctl.Do("reset"))
			require.NoError(t, ctl.Do("mode=nvfs"))
			if tc.fault != "" {
				require.NoError(t, ctl.Do(tc.fault))
			}
			_, stderr, code := run(t, "load", "--to", tc.to, "--direct", "on", p)
			require.Equal(t, tc.code, code, stderr)
			require.Contains(t, stderr, tc.msg)
		})
	}
	t.Run("auto falls back to host without a GPU", func(t *testing.T) {
		require.NoError(t, ctl.Do("reset"))
		require.NoError(t, ctl.Do("devices=0"))
		out, stderr, code := run(t, "load", "--to", "auto", "--json", p)
		require.Equal(t, 0, code, stderr)
		var res loadJSON
		require.NoError(t, json.Unmarshal([]byte(out), &res))
		require.Equal(t, "host", res.Path)
		require.Contains(t, res.Reason, "auto: no GPU")
	})
}

func TestBenchGPUModesThroughTestDouble(t *testing.T) {
	ctl := useFakeCUDA(t)
	require.NoError(t, ctl.Do("mode=nvfs"))
	p, _ := writeFile(t, t.TempDir(), "x.bin", 2<<20+1)
	out, stderr, code := run(t, "bench", "--json", "--runs", "1", "--modes", "gds,bounce,cached-bounce", p)
	require.Equal(t, 0, code, stderr)
	var rep benchReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Len(t, rep.Results, 3)
	for _, r := range rep.Results {
		require.Greater(t, r.GiBPerS, 0.0, r.Mode)
		if r.Mode == "gds" {
			require.Equal(t, "nvfs", r.GDSMode, "the result says which mode cuFile ran in")
		} else {
			require.Empty(t, r.GDSMode, r.Mode)
		}
	}

	// In compat mode, gds asked for still runs, and the table says so.
	require.NoError(t, ctl.Do("mode=compat"))
	out, stderr, code = run(t, "bench", "--runs", "1", "--modes", "gds", p)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "gds (compat)")
}
