package webdataset

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The format packages are pure: they parse and write their formats, and
// import neither the loading engine nor the URL layer (manifest checks
// through a vfs.Mux live in stage).
func TestFormatPackagesImportNoEngine(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".", "../safetensors", "../npy").CombinedOutput()
	require.NoError(t, err, "%s", out)
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "github.com/gdsload/gdsload/shards/webdataset", "the listing names the packages linked")
	for _, dep := range deps {
		require.NotEqual(t, "github.com/gdsload/gdsload/loader", dep)
		require.NotContains(t, dep, "github.com/gdsload/gdsload/vfs")
	}
}
