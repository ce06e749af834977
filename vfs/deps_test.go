package vfs_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A program that reads only local files links no remote client: the
// packages that open files through a Mux, without a backend package
// imported, depend neither on the AWS SDK nor on rdmafs.
func TestLocalReadersLinkNoRemoteClient(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "../shards/iterator", "../shards/checkpoint", "../stage", "../bench").CombinedOutput()
	require.NoError(t, err, "%s", out)
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "github.com/gdsload/gdsload/vfs", "the listing names the packages linked")
	for _, dep := range deps {
		require.NotContains(t, dep, "aws-sdk-go-v2")
		require.NotContains(t, dep, "gdsload/gdsload/rdmafs")
		require.NotContains(t, dep, "gdsload/gdsload/objstore")
	}
}
