package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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

// maxRSSHelperEnv makes the test binary a launcher (TestMain): it runs the
// command its value holds (JSON argv), copies its standard output, and
// writes the command's peak resident set (ru_maxrss, bytes) to the file
// named by GDSLOAD_TEST_MAXRSS_OUT. The launcher is a fresh, small
// process: Go starts children with vfork, and the kernel carries the
// parent's peak RSS into the child's ru_maxrss at exec, so measuring from
// the test process itself would report the test process's own peak.
const maxRSSHelperEnv = "GDSLOAD_TEST_MAXRSS_ARGV"

func runMeasured(argv string) int {
	var args []string
	if err := json.Unmarshal([]byte(argv), &args); err != nil || len(args) == 0 {
		fmt.Fprintf(os.Stderr, "%s: want a JSON argv: %v\n", maxRSSHelperEnv, err)
		return 2
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	err := cmd.Run()
	if cmd.ProcessState == nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	peak := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10 // KiB
	if werr := os.WriteFile(os.Getenv("GDSLOAD_TEST_MAXRSS_OUT"), []byte(strconv.FormatInt(peak, 10)), 0o644); werr != nil {
		fmt.Fprintln(os.Stderr, werr)
		return 2
	}
	return cmd.ProcessState.ExitCode()
}

// Loading a 2 GiB checkpoint into a (fake) GPU stages it through the
// ring: the process's peak resident set stays under 256 MiB. The double
// keeps its device memory out of the resident set, as a GPU's is.
func TestLoadToGPUPeakRSSBounded(t *testing.T) {
	s := fakecuda.Use(t)
	bin := gdsloadBinary(t)
	dir := t.TempDir()
	p := writeSparseCheckpoint(t, dir, 2<<30)
	for _, path := range []string{"gds", "bounce"} {
		t.Run(path, func(t *testing.T) {
			argv, err := json.Marshal([]string{bin, "load", "--to", "gpu:0", "--path", path, "--json", p})
			require.NoError(t, err)
			peakFile := filepath.Join(dir, "peak-"+path)
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), "FAKECUDA_MEM=4294967296", "FAKECUDA_DELAY_US=0",
				maxRSSHelperEnv+"="+string(argv), "GDSLOAD_TEST_MAXRSS_OUT="+peakFile)
			for k, v := range s.Env() {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
			out, err := cmd.Output()
			require.NoError(t, err, "%s", out)
			var res loadJSON
			require.NoError(t, json.Unmarshal(out, &res))
			require.EqualValues(t, 2<<30, res.Bytes)
			require.Equal(t, path, res.Path)
			b, err := os.ReadFile(peakFile)
			require.NoError(t, err)
			peak, err := strconv.ParseInt(string(b), 10, 64)
			require.NoError(t, err)
			t.Logf("peak RSS %d MiB", peak>>20)
			require.Less(t, peak, int64(256<<20), "peak RSS of gdsload load --to gpu:0 of 2 GiB")
		})
	}
}
