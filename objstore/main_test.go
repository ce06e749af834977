package objstore_test

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/gdsload/gdsload/internal/miniotest"
	"github.com/stretchr/testify/require"
)

// One single-node server and one 4-node distributed cluster serve every
// test of this binary that does not kill a server; they start on first use
// and stop when the tests end. Tests that kill servers start their own.
var shared struct {
	mu     sync.Mutex
	dir    string
	single *miniotest.Cluster
	dist   *miniotest.Cluster
}

func TestMain(m *testing.M) {
	code := m.Run()
	shared.mu.Lock()
	for _, c := range []*miniotest.Cluster{shared.single, shared.dist} {
		if c != nil {
			c.Stop()
		}
	}
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	shared.mu.Unlock()
	os.Exit(code)
}

// sharedCluster returns the shared deployment of n nodes (1 or 4),
// starting it on first use. A missing minio binary fails the test: `make
// test` installs it.
func sharedCluster(t testing.TB, n int) *miniotest.Cluster {
	t.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	slot := &shared.single
	if n > 1 {
		slot = &shared.dist
	}
	if *slot != nil {
		return *slot
	}
	if shared.dir == "" {
		d, err := miniotest.TempDir("objstore-minio-")
		require.NoError(t, err)
		shared.dir = d
	}
	c, err := miniotest.Start(fmt.Sprintf("%s/%dnode", shared.dir, n), n)
	require.NoError(t, err, "starting a %d-node MinIO: %v", n, err)
	*slot = c
	return c
}

// ownCluster starts a deployment for one test (one that kills nodes).
func ownCluster(t *testing.T, n int) *miniotest.Cluster {
	t.Helper()
	dir, err := miniotest.TempDir("objstore-own-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	c, err := miniotest.Start(dir, n)
	require.NoError(t, err, "starting a %d-node MinIO: %v", n, err)
	t.Cleanup(c.Stop)
	return c
}
