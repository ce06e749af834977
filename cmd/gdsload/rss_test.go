package main

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gdsload/gdsload/internal/fakecuda"
)

// writeSparseCheckpoint writes a safetensors file of one U8 tensor of n
// bytes whose data region is a hole: quick to make, and read at disk
// (page cache) speed.
func writeSparseCheckpoint(t *testing.T, dir string, n int64) string {
	t.Helper()
	header, err := json.Marshal(map[string]any{"w": map[string]any{"dtype": "U8", "shape": []int64{n}, "data_offsets": []int64{0, n}}})
	require.NoError(t, err)
	for len(header)%8 != 0 {
		header = append(header, ' ')
	}
	p := filepath.Join(dir, "big.safetensors")
	f, err := os.Create(p)
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, binary.Write(f, binary.LittleEndian, uint64(len(header))))
	_, err = f.Write(header)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(int64(8+len(header))+n))
	return p
}

// Loading a 2 GiB checkpoint into a (fake) GPU stages it through the
// ring: the process's peak resident set stays under 256 MiB. The double
// keeps its device memory out of the resident set, as a GPU's is.
func TestLoadToGPUPeakRSSBounded(t *testing.T) {
	s := fakecuda.Use(t)
	bin := gdsloadBinary(t)
	p := writeSparseCheckpoint(t, t.TempDir(), 2<<30)
	for _, path := range []string{"gds", "bounce"} {
		t.Run(path, func(t *testing.T) {
			cmd := exec.Command(bin, "load", "--to", "gpu:0", "--path", path, "--json", p)
			cmd.Env = append(os.Environ(), "FAKECUDA_MEM=4294967296", "FAKECUDA_DELAY_US=0")
			for k, v := range s.Env() {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
			out, err := cmd.Output()
			require.NoError(t, err, "%s", out)
			var res loadJSON
			require.NoError(t, json.Unmarshal(out, &res))
			require.EqualValues(t, 2<<30, res.Bytes)
			require.Equal(t, path, res.Path)
			// ru_maxrss: the child's peak resident set (VmHWM), in KiB.
			peak := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
			t.Logf("peak RSS %d MiB", peak>>20)
			require.Less(t, peak, int64(256<<20), "peak RSS of gdsload load --to gpu:0 of 2 GiB")
		})
	}
}
