package cufile_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gdsload/gdsload/cufile"
)

// captureStdout runs fn with the process's standard output and error sent
// to a file, and returns what was written there.
func captureStdout(t *testing.T, fn func()) string {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "stdout")
	require.NoError(t, err)
	defer f.Close()
	var saved [2]int
	for i, fd := range []int{1, 2} {
		saved[i], err = unix.Dup(fd)
		require.NoError(t, err)
		require.NoError(t, unix.Dup2(int(f.Fd()), fd))
	}
	func() {
		defer func() {
			for i, fd := range []int{1, 2} {
				_ = unix.Dup2(saved[i], fd)
				_ = unix.Close(saved[i])
			}
		}()
		fn()
	}()
	b, err := os.ReadFile(f.Name())
	require.NoError(t, err)
	return string(b)
}

// libcufile prints its diagnostics on standard output and drops cufile.log
// into the current folder (Debian's libcufile 1.4 without libcuda.so.1,
// which the double's "nocuda" fault imitates). Driver.Open keeps both
// away: the lines end up in the error, with the real cause named, and the
// log in Config.LogFile.
func TestDriverOpenKeepsLibcufileOutputAway(t *testing.T) {
	reset(t, "fault=nocuda")
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("CUFILE_LOGFILE_PATH", "") // unset: Config.LogFile decides
	cfg := fake.Config()
	cfg.LogFile = filepath.Join(t.TempDir(), "cufile.log")
	c, err := cufile.OpenCuFile(cfg)
	require.NoError(t, err)
	var openErr error
	out := captureStdout(t, func() { openErr = c.Driver().Open() })
	assert.Empty(t, out, "libcufile's lines reached standard output: %q", out)
	var oe *cufile.OpError
	require.ErrorAs(t, openErr, &oe, "Open: %v, want an unavailable *OpError CU_FILE_NVFS_SETUP_ERROR", openErr)
	require.ErrorIs(t, openErr, cufile.ErrUnavailable, "Open: %v, want an unavailable *OpError CU_FILE_NVFS_SETUP_ERROR", openErr)
	require.Equal(t, 5033, oe.Code, "Open: %v, want an unavailable *OpError CU_FILE_NVFS_SETUP_ERROR", openErr)
	assert.Contains(t, oe.Output, "dlopen error libcuda.so.1", "output %q, cause %q: want libcufile's lines and libcuda.so.1 named as the cause", oe.Output, oe.Cause)
	assert.Contains(t, oe.Cause, "libcuda.so.1", "output %q, cause %q: want libcufile's lines and libcuda.so.1 named as the cause", oe.Output, oe.Cause)
	for _, want := range []string{"CU_FILE_NVFS_SETUP_ERROR (5033)", "could not load libcuda.so.1", "install the NVIDIA driver"} {
		assert.ErrorContains(t, openErr, want, "error %q does not say %q", openErr, want)
	}
	assert.NotContains(t, openErr.Error(), "dlopen error", "error %q quotes libcufile's raw lines (they belong in Output)", openErr)
	m := c.Driver().Messages()
	assert.Equal(t, oe.Output, m, "Messages() = %q, want the open's output %q", m, oe.Output)
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, left, "the current folder holds %v after a driver open", left)
	log, err := os.ReadFile(cfg.LogFile)
	assert.NoError(t, err, "libcufile's log %s: %q, %v; want its lines there", cfg.LogFile, log, err)
	assert.Contains(t, string(log), "libcuda.so.1", "libcufile's log %s: %q, %v; want its lines there", cfg.LogFile, log, err)
	got := os.Getenv("CUFILE_LOGFILE_PATH")
	assert.Equal(t, cfg.LogFile, got, "CUFILE_LOGFILE_PATH = %q, want %q", got, cfg.LogFile)
}

// A CUFILE_LOGFILE_PATH the user set wins over Config.LogFile.
func TestDriverOpenKeepsUsersLogFile(t *testing.T) {
	reset(t, "fault=nocuda")
	mine := filepath.Join(t.TempDir(), "mine.log")
	t.Setenv("CUFILE_LOGFILE_PATH", mine)
	cfg := fake.Config()
	cfg.LogFile = filepath.Join(t.TempDir(), "cufile.log")
	c, err := cufile.OpenCuFile(cfg)
	require.NoError(t, err)
	captureStdout(t, func() { _ = c.Driver().Open() })
	_, err = os.Stat(mine)
	assert.NoError(t, err, "the user's log file: %v", err)
	_, err = os.Stat(cfg.LogFile)
	assert.Error(t, err, "Config.LogFile was used although CUFILE_LOGFILE_PATH is set")
	got := c.Driver().LogFile()
	assert.Equal(t, mine, got, "LogFile() = %q, want %q", got, mine)
}

// Without libcufile's own words, the cause comes from the machine: no
// NVIDIA kernel driver, or no nvidia-fs behind CU_FILE_DRIVER_NOT_INITIALIZED.
func TestDriverOpenNamesTheCause(t *testing.T) {
	noGPU := t.TempDir() // a machine with no NVIDIA driver at all
	noFS := t.TempDir()  // the driver, but no nvidia-fs
	require.NoError(t, os.MkdirAll(filepath.Join(noFS, "proc", "driver", "nvidia"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(noFS, "proc", "driver", "nvidia", "version"), []byte("NVRM version: test\n"), 0o644))
	for _, tc := range []struct {
		name, root, fault, want string
	}{
		{"no driver", noGPU, "fault=driver_open", "no NVIDIA kernel driver is loaded"},
		{"no nvidia-fs", noFS, "fault=driver_open", "the nvidia-fs kernel module is not loaded"},
		{"no GPU", noFS, "devices=0", "the CUDA driver sees no GPU"},
		{"GPU machine", fake.Root, "fault=driver_open", "load nvidia-fs, enable PCI P2PDMA"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reset(t, tc.fault)
			cfg := fake.Config()
			cfg.Root = tc.root
			c, err := cufile.OpenCuFile(cfg)
			require.NoError(t, err)
			err = c.Driver().Open()
			assert.ErrorContains(t, err, tc.want, "Open: %v, want it to say %q", err, tc.want)
		})
	}
}

func TestProbePlatform(t *testing.T) {
	cfg := fake.Config()
	cfg.Getenv = func(k string) string { return map[string]string{"CUFILE_ENV_PATH_JSON": "/nonexistent/cufile.json"}[k] }
	p := cufile.ProbePlatform(cfg)
	assert.NotEmpty(t, p.NVIDIADriver, "the double's machine: %+v, want the NVIDIA driver, nvidia-fs and udev", p)
	assert.NotEmpty(t, p.NVIDIAFS, "the double's machine: %+v, want the NVIDIA driver, nvidia-fs and udev", p)
	assert.True(t, p.NVIDIAFSStats, "the double's machine: %+v, want the NVIDIA driver, nvidia-fs and udev", p)
	assert.True(t, p.Udev, "the double's machine: %+v, want the NVIDIA driver, nvidia-fs and udev", p)
	assert.Equal(t, "/nonexistent/cufile.json", p.CuFileJSON, "cufile.json and log: %+v", p)
	assert.False(t, p.CuFileJSONFound, "cufile.json and log: %+v", p)
	assert.Equal(t, cfg.LogFile, p.LogFile, "cufile.json and log: %+v", p)
	cfg.Root = t.TempDir()
	p = cufile.ProbePlatform(cfg)
	assert.Empty(t, p.NVIDIADriver, "an empty machine: %+v", p)
	assert.Empty(t, p.NVIDIAFS, "an empty machine: %+v", p)
	assert.False(t, p.Udev, "an empty machine: %+v", p)
}
