package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gdsload/gdsload/cufile"
	"github.com/gdsload/gdsload/internal/fakecuda"
)

func runDoctorCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newDoctorCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func doctorJSON(t *testing.T, args ...string) doctorReport {
	t.Helper()
	out, err := runDoctorCmd(t, append([]string{"--json"}, args...)...)
	require.NoError(t, err)
	var r doctorReport
	require.NoError(t, json.Unmarshal([]byte(out), &r), out)
	return r
}

// noCUDA points the library search at paths that do not exist, so the
// report is the same whether or not this machine has CUDA.
func noCUDA(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "absent")
	t.Setenv("GDSLOAD_LIBCUFILE", filepath.Join(missing, "libcufile.so.0"))
	t.Setenv("GDSLOAD_LIBCUDART", filepath.Join(missing, "libcudart.so.13"))
	t.Setenv("GDSLOAD_LIBCUDA", filepath.Join(missing, "libcuda.so.1"))
}

func TestDoctorExplainsNoGPU(t *testing.T) {
	noCUDA(t)
	dir := t.TempDir()
	r := doctorJSON(t, dir)

	names := map[string]bool{}
	for _, l := range r.Libraries {
		names[l.Name] = true
		if strings.HasPrefix(l.Name, "libcu") {
			require.False(t, l.Found, l.Name)
			require.Contains(t, l.Error, "not found", l.Name)
			require.Contains(t, l.Error, "GDSLOAD_LIB", "the error says how to point at the library")
		}
	}
	for _, n := range []string{"libcufile.so.0", "libcudart.so", "libcuda.so.1", "libnvidia-ml.so.1", "libibverbs.so.1"} {
		require.True(t, names[n], "libraries lists %s", n)
	}
	require.Equal(t, "unavailable", string(r.GDSMode))
	require.Contains(t, r.GDSReason, "libcufile.so.0 not found")
	require.Equal(t, "none", r.GPULoad.Path)
	require.Contains(t, r.GPULoad.Reason, "no GPU: libcudart.so not found")
	require.Zero(t, r.GPUCount)
	require.NotEmpty(t, r.GPUError)
	require.NotNil(t, r.RDMADevices)
	require.NotEmpty(t, r.MemlockLimit.Soft)

	require.NotEmpty(t, r.DirectIO.FileSystem)
	require.NotEmpty(t, r.DirectIO.Reason)
	if !r.DirectIO.OK {
		require.Contains(t, r.DirectIO.Reason, "refused")
	}
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, left, "the O_DIRECT scratch file is removed")
}

func TestDoctorDirectIOOnAFile(t *testing.T) {
	noCUDA(t)
	name := filepath.Join(t.TempDir(), "data")
	require.NoError(t, os.WriteFile(name, bytes.Repeat([]byte{7}, 8192), 0o644))
	r := doctorJSON(t, name)
	require.Equal(t, name, r.DirectIO.Path)
	if r.DirectIO.OK {
		require.Contains(t, r.DirectIO.Reason, "O_DIRECT read of data")
	}
	r = doctorJSON(t, filepath.Join(t.TempDir(), "missing"))
	require.False(t, r.DirectIO.OK)
	require.Contains(t, r.DirectIO.Reason, "no such file")
}

func TestDoctorHumanOutput(t *testing.T) {
	noCUDA(t)
	out, err := runDoctorCmd(t, t.TempDir())
	require.NoError(t, err)
	t.Log(out)
	for _, want := range []string{"Libraries", "libcufile.so.0", "missing", "GPUDirect Storage", "unavailable",
		"memlock", "Direct I/O", "GPU load", "gpu:0", "none", "no GPU"} {
		require.Contains(t, out, want)
	}
	_, err = runDoctorCmd(t, "a", "b")
	var u usageError
	require.True(t, errors.As(err, &u), "two paths is a usage error: %v", err)
}

// With the CUDA test double standing in for the libraries, doctor reports
// the mode libcufile gives and the path a load would take.
func TestDoctorWithFakeCUDA(t *testing.T) {
	ctl := useFakeCUDA(t)
	for _, tc := range []struct{ mode, path, reason string }{
		{"nvfs", "gds", "cuFile in nvfs mode"},
		{"compat", "bounce", "gds refused: cuFile in compat mode"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			require.NoError(t, ctl.Do("reset"))
			require.NoError(t, ctl.Do("mode="+tc.mode))
			r := doctorJSON(t, t.TempDir())
			require.Equal(t, tc.mode, string(r.GDSMode))
			require.Equal(t, tc.path, r.GPULoad.Path)
			require.Contains(t, r.GPULoad.Reason, tc.reason)
			require.Equal(t, 1, r.GPUCount)
			require.Equal(t, "13.0", r.CUDARuntimeVersion)
			require.NotNil(t, r.CuFileProperties)
			require.Zero(t, ctl.Counter("driver_refs"), "doctor closed the cuFile driver")
		})
	}
	require.NoError(t, ctl.Do("fault=driver_open"))
	r := doctorJSON(t, t.TempDir())
	require.Equal(t, "unavailable", string(r.GDSMode))
	require.Equal(t, "bounce", r.GPULoad.Path)
	require.Contains(t, r.GPULoad.Reason, "cuFileDriverOpen failed: CU_FILE_DRIVER_NOT_INITIALIZED (5001)")
}

// --require gds|bounce|host fails the command (exit 1, after the report)
// when a load cannot take that path: gds needs cuFile in nvfs or p2pdma
// mode, bounce a usable GPU, host nothing.
func TestDoctorRequire(t *testing.T) {
	for _, tc := range []struct {
		name, setup, require string
		ok                   bool
	}{
		{"nvfs gds", "mode=nvfs", "gds", true},
		{"compat gds", "mode=compat", "gds", false},
		{"compat bounce", "mode=compat", "bounce", true},
		{"driver refused gds", "fault=driver_open", "gds", false},
		{"no GPU bounce", "devices=0", "bounce", false},
		{"no GPU host", "devices=0", "host", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctl := useFakeCUDA(t)
			require.NoError(t, ctl.Do(tc.setup))
			cmd := newDoctorCmd()
			var out bytes.Buffer
			cmd.SetOut(&out)
			cmd.SetErr(io.Discard)
			cmd.SilenceUsage = true // as under the root command
			cmd.SetArgs([]string{"--json", "--require", tc.require, t.TempDir()})
			err := cmd.Execute()
			var r doctorReport
			require.NoError(t, json.Unmarshal(out.Bytes(), &r), "the report is printed whatever the outcome: %s", out.String())
			if tc.ok {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.ErrorIs(t, err, cufile.ErrUnavailable)
			var u usageError
			require.False(t, errors.As(err, &u), "an unusable path is not a usage error")
			require.Equal(t, exitError, exitCode(err, false, io.Discard))
		})
	}
	_, err := runDoctorCmd(t, "--require", "nvme", t.TempDir())
	var u usageError
	require.True(t, errors.As(err, &u), "--require nvme: %v", err)
}

// Where libcufile prints its diagnostics on standard output and drops
// cufile.log into the current folder (Debian's libcufile without a driver,
// which the double's "nocuda" fault imitates, or the real one where it is
// installed), the gdsload binary's doctor --json still prints JSON only,
// names the cause, and leaves the current folder as it was.
func TestDoctorJSONWithTalkativeLibcufile(t *testing.T) {
	bin := gdsloadBinary(t)
	s := fakecuda.Use(t)
	type setup struct {
		name string
		env  []string
	}
	setups := []setup{{"double", []string{
		"GDSLOAD_LIBCUFILE=" + s.CuFile, "GDSLOAD_LIBCUDART=" + s.CUDART, "GDSLOAD_LIBCUDA=" + s.CUDA, "FAKECUDA_FAIL=nocuda",
	}}}
	if l := cufile.ProbeLibrary("libcufile.so.0"); l.Found && cufile.ProbeLibrary("libcuda.so.1").Error != "" {
		setups = append(setups, setup{"real " + l.Path, nil})
	}
	for _, st := range setups {
		t.Run(st.name, func(t *testing.T) {
			cwd, cache := t.TempDir(), t.TempDir()
			var env []string
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, "GDSLOAD_LIB") && !strings.HasPrefix(kv, "CUFILE_") && !strings.HasPrefix(kv, "FAKECUDA_") && !strings.HasPrefix(kv, "XDG_CACHE_HOME=") {
					env = append(env, kv)
				}
			}
			env = append(append(env, "XDG_CACHE_HOME="+cache), st.env...)
			cmd := exec.Command(bin, "doctor", "--json", "--require", "gds", cwd)
			cmd.Dir, cmd.Env = cwd, env
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			require.True(t, errors.As(err, &ee) && ee.ExitCode() == exitError, "--require gds without a GPU: %v; stderr %s", err, stderr.String())
			var r doctorReport
			require.NoError(t, json.Unmarshal(stdout.Bytes(), &r), "stdout is not JSON:\n%s", stdout.String())
			require.Contains(t, r.GDSReason, "libcuda.so.1", "the cause is named")
			require.Contains(t, r.GDSMessages, "dlopen error libcuda.so.1", "libcufile's lines are in the report's details")
			require.NotContains(t, stderr.String(), "dlopen error", "libcufile's lines reach no terminal")
			require.Contains(t, stderr.String(), "gds unusable")
			left, err := os.ReadDir(cwd)
			require.NoError(t, err)
			require.Empty(t, left, "doctor left files in the current folder")
			log, err := os.ReadFile(filepath.Join(cache, "gdsload", "cufile.log"))
			require.NoError(t, err, "libcufile logs in the user's cache folder")
			require.Contains(t, string(log), "libcuda.so.1")
			require.Equal(t, filepath.Join(cache, "gdsload", "cufile.log"), r.GDSPlatform.LogFile)
		})
	}
}
