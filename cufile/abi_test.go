package cufile

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// requireReal is set (to 1) where the real NVIDIA libraries must be
// present, as in CI (.ci/run installs them): the tests below then fail
// instead of skipping when they are missing.
const requireReal = "GDSLOAD_REQUIRE_REAL_CUFILE"

// skipOrFail skips a test that needs something this machine lacks, or
// fails it where requireReal says the machine must have it.
func skipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv(requireReal) == "1" {
		t.Fatalf("%s (%s=1)", msg, requireReal)
	}
	t.Skip(msg)
}

// realCuFileHeader returns the path of NVIDIA's cufile.h: Debian's
// libcufile-dev puts it in /usr/include, a CUDA toolkit in its include
// folder.
func realCuFileHeader() string {
	var dirs []string
	if h := os.Getenv("CUDA_HOME"); h != "" {
		dirs = append(dirs, filepath.Join(h, "include"))
	}
	dirs = append(dirs, "/usr/local/cuda/include", "/usr/include")
	for _, d := range dirs {
		if p := filepath.Join(d, "cufile.h"); exists(p) {
			return p
		}
	}
	return ""
}

// cufileapi.h, gdsload's own declarations of the libcufile calls, matches
// NVIDIA's cufile.h: testdata/abi/abi_check.c, compiled against the real
// header, checks every struct layout, enum value and function type with
// static asserts, and prints the header's CUfileOpError table, which must
// agree with opErrorNames. It runs where libcufile-dev (Debian non-free)
// or a CUDA toolkit is installed, and skips with the reason elsewhere.
func TestCuFileABI(t *testing.T) {
	header := realCuFileHeader()
	if header == "" {
		skipOrFail(t, "cufile.h not found in $CUDA_HOME/include, /usr/local/cuda/include or /usr/include: install libcufile-dev (Debian non-free) to run the ABI check")
	}
	text, err := os.ReadFile(header)
	require.NoError(t, err)
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "gcc"
	}
	bin := filepath.Join(t.TempDir(), "abi_check")
	args := []string{"-std=gnu11", "-Wall", "-Werror",
		"-I", filepath.Join("testdata", "abi"), // the stand-in cuda.h first
		"-I", ".", "-I", filepath.Dir(header),
		"-o", bin, filepath.Join("testdata", "abi", "abi_check.c")}
	for _, c := range []struct {
		name string
		v    int
	}{
		{"cuFileBaseErr", cuFileBaseErr}, {"CuFileSuccess", CuFileSuccess},
		{"CuFileDriverNotInitialized", CuFileDriverNotInitialized}, {"CuFileCUDADriverError", CuFileCUDADriverError},
		{"CuFileDIONotSet", CuFileDIONotSet}, {"cuFileNVFSDriverError", cuFileNVFSDriverError},
		{"cuFileNVFSSetupError", cuFileNVFSSetupError}, {"statusNVMeSupported", statusNVMeSupported},
		{"controlAllowCompat", controlAllowCompat}, {"paramForceCompatMode", paramForceCompatMode},
		{"paramUsePCIP2PDMA", paramUsePCIP2PDMA}, {"p2pFlagPCIP2PDMA", p2pFlagPCIP2PDMA},
	} {
		args = append(args, fmt.Sprintf("-DGO_%s=%d", c.name, c.v))
	}
	// Calls newer than cuFile 1.4, checked where the header declares them.
	for _, call := range []string{"cuFileGetVersion", "cuFileGetParameterBool", "cuFileDriverGetP2PFlags"} {
		if strings.Contains(string(text), call+"(") {
			args = append(args, "-DGD_HAS_"+call)
		} else {
			t.Logf("%s does not declare %s (optional in gdsload)", header, call)
		}
	}
	ccOut, err := exec.Command(cc, args...).CombinedOutput()
	require.NoError(t, err, "cufileapi.h does not match %s:\n%s %s\n%s", header, cc, strings.Join(args, " "), ccOut)
	out, err := exec.Command(bin).Output()
	require.NoError(t, err, "running the ABI check: %v", err)
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		require.Len(t, f, 2, "ABI check printed %q, want \"CODE NAME\"", line)
		code, err := strconv.Atoi(f[0])
		require.NoError(t, err, "ABI check printed %q: %v", line, err)
		if strings.HasSuffix(f[1], "_MAX_ERROR") {
			continue // the end marker of the table, not a status
		}
		n++
		got := opErrorNames[code]
		assert.Equal(t, f[1], got, "cufile.h names status %d %s; opErrorNames says %q", code, f[1], got)
	}
	assert.GreaterOrEqual(t, n, 30, "the header's status table has only %d entries: %s", n, out)
}
