package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type gpusResultJSON struct {
	Bytes     int64 `json:"bytes"`
	Tensors   int   `json:"tensors"`
	BytesRead int64 `json:"bytes_read"`
	GPUs      []struct {
		Device  int     `json:"device"`
		Bytes   int64   `json:"bytes"`
		GiBPerS float64 `json:"gib_per_s"`
		Path    string  `json:"path"`
		Staging string  `json:"staging"`
		Files   []struct {
			Name   string `json:"name"`
			SHA256 string `json:"sha256"`
		} `json:"files"`
	} `json:"gpus"`
}

func TestLoadOntoSeveralGPUs(t *testing.T) {
	ctl := useFakeCUDA(t)
	dir := t.TempDir()
	want := map[string]string{}
	var total int64
	for name, n := range map[string]int{"a.bin": 3 << 20, "b.bin": 2<<20 + 5, "c.bin": 1 << 20, "d.bin": 4097, "e.bin": 1<<20 + 1} {
		p, sum := writeFile(t, dir, name, n)
		want[p] = sum
		total += int64(n)
	}
	for _, tc := range []struct {
		to      string
		devices []int
	}{
		{"gpu:all", []int{0, 1, 2, 3}},
		{"gpu:3,1", []int{3, 1}},
	} {
		t.Run(tc.to, func(t *testing.T) {
			require.NoError(t, ctl.Do("reset"))
			require.NoError(t, ctl.Do("devices=4"))
			out, stderr, code := run(t, "load", "--to", tc.to, "--checksum", "sha256", "--json", "--chunk-size", "1M", "--workers", "2", dir)
			require.Equal(t, 0, code, stderr)
			var res gpusResultJSON
			require.NoError(t, json.Unmarshal([]byte(out), &res))
			require.Equal(t, total, res.Bytes)
			require.Equal(t, total, res.BytesRead)
			require.Len(t, res.GPUs, len(tc.devices))
			files := 0
			for i, g := range res.GPUs {
				assert.Equal(t, tc.devices[i], g.Device)
				assert.NotEmpty(t, g.Path)
				assert.NotEmpty(t, g.Staging)
				for _, f := range g.Files {
					assert.Equal(t, want[f.Name], f.SHA256, f.Name)
					files++
				}
			}
			assert.Equal(t, len(want), files)
		})
	}
}

func TestLoadDeviceMapUsage(t *testing.T) {
	useFakeCUDA(t)
	dir := t.TempDir()
	writeFile(t, dir, "a.bin", 10)
	for _, args := range [][]string{
		{"load", "--to", "gpu:0", "--device-map", "=0", dir},
		{"load", "--to", "gpu:all", "--device-map", "x", dir},
		{"load", "--to", "gpu:all", "--device-map", "=0", dir},
	} {
		_, _, code := run(t, args...)
		assert.Equal(t, 2, code, "%v", args)
	}
}

func TestLoadCheckpointWithDeviceMap(t *testing.T) {
	ctl := useFakeCUDA(t)
	require.NoError(t, ctl.Do("devices=2"))
	out, stderr, code := run(t, "load", "--to", "gpu:0,1", "--device-map", "=1", "--json", "../../testdata/model.safetensors")
	require.Equal(t, 0, code, stderr)
	var res gpusResultJSON
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Len(t, res.GPUs, 2)
	assert.Zero(t, res.GPUs[0].Bytes, "the map sends every tensor to gpu:1")
	assert.Positive(t, res.GPUs[1].Bytes)
	assert.Positive(t, res.Tensors)
	assert.Greater(t, res.BytesRead, res.Bytes, "headers too")
}

// A GPU failing in the middle of a multi-GPU load fails the command with
// an error naming that GPU, and every GPU's memory, pinned buffer and
// stream is given back (useFakeCUDA checks the rest at the end).
func TestLoadOntoSeveralGPUsOneFails(t *testing.T) {
	ctl := useFakeCUDA(t)
	dir := t.TempDir()
	for _, name := range []string{"a.bin", "b.bin", "c.bin", "d.bin"} {
		writeFile(t, dir, name, 3<<20)
	}
	for _, tc := range []struct {
		fault, want string
		args        []string
	}{
		// One worker: the second chunk starts once the first landed.
		{"fail_device:1:1048576", "gpu:1: ", []string{"load", "--to", "gpu:all", "--chunk-size", "1M", "--workers", "1", dir}},
		// A checkpoint of one file lands whole on gpu:0.
		{"fail_device:0:0", "gpu:0: ", []string{"load", "--to", "gpu:all", "--chunk-size", "1M", "../../testdata/model.safetensors"}},
	} {
		require.NoError(t, ctl.Do("reset"))
		require.NoError(t, ctl.Do("devices=4"))
		require.NoError(t, ctl.Do("fault="+tc.fault))
		_, stderr, code := run(t, tc.args...)
		assert.Equal(t, 1, code, "%v", tc.args)
		assert.Contains(t, stderr, tc.want)
		t.Log(stderr)
		for _, c := range []string{"allocs", "pinned", "streams", "events", "handles"} {
			assert.Zero(t, ctl.Counter(c), "%s after %v", c, tc.args)
		}
	}
}
