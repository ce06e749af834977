package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/gdsload/gdsload/internal/clitest"
	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/shards/iterator"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	if argv := os.Getenv(maxRSSHelperEnv); argv != "" {
		os.Exit(runMeasured(argv))
	}
	// iterate's scan cache goes to a folder of this run's, not to the
	// user's cache.
	cache, err := os.MkdirTemp("", "gdsload-scan-cache-")
	if err != nil {
		panic(err)
	}
	os.Setenv(iterator.ScanCacheEnv, cache)
	// Nor is the node's route profile read: tests that calibrate set
	// their own.
	os.Setenv(loader.RouteProfileEnv, "off")
	code := m.Run()
	clitest.Cleanup()
	os.RemoveAll(cache)
	os.Exit(code)
}

// gdsloadBinary builds the real binary once per test run, so servers run
// as separate processes as users run them.
func gdsloadBinary(t *testing.T) string { return clitest.Binary(t, ".") }

// startServer runs `gdsload serve` on root with a token and returns its
// address once it says it listens; the server is stopped (SIGTERM) and
// must exit 0 at cleanup.
func startServer(t *testing.T, root, token string) string {
	t.Helper()
	addr, _ := startServerProcess(t, root, token)
	return addr
}

// startServerProcess is startServer that also returns the process.
func startServerProcess(t *testing.T, root, token string) (string, *os.Process) {
	t.Helper()
	return clitest.Serve(t, gdsloadBinary(t), root, []byte(token))
}

func TestLoadFromRemoteServerProcess(t *testing.T) {
	root := t.TempDir()
	want := map[string]string{}
	for name, n := range map[string]int{"empty": 0, "one": 1, "a/4095": 4095, "a/4097": 4097, "a/b/big": 5<<20 + 17} {
		_, sum := writeFile(t, root, name, n)
		want[name] = sum
	}
	addr := startServer(t, root, "s3cret-token-0123456789abcdef")
	t.Setenv("GDSLOAD_TOKEN", "s3cret-token-0123456789abcdef")

	out, stderr, code := run(t, "load", "--json", "--checksum", "sha256", "--chunk-size", "1M", "rdmafs://"+addr+"/")
	require.Equal(t, 0, code, stderr)
	var res loadJSON
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Len(t, res.Files, len(want))
	for _, f := range res.Files {
		name := strings.TrimPrefix(f.Name, "rdmafs://"+addr+"/")
		require.Equal(t, want[name], f.SHA256, f.Name)
	}

	// One file by URL, and a wrong token.
	out, stderr, code = run(t, "load", "--json", "--checksum", "sha256", "rdmafs://"+addr+"/a/b/big")
	require.Equal(t, 0, code, stderr)
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Equal(t, want["a/b/big"], res.Files[0].SHA256)

	t.Setenv("GDSLOAD_TOKEN", "wrong-token-0123456789abcdef")
	_, stderr, code = run(t, "load", "rdmafs://"+addr+"/one")
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "auth")

	t.Setenv("GDSLOAD_TOKEN", "s3cret-token-0123456789abcdef")
	_, stderr, code = run(t, "load", "rdmafs://"+addr+"/missing")
	require.Equal(t, 1, code)
	require.Contains(t, strings.ToLower(stderr), "not found")
}

func TestBenchRemoteServerProcess(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "data.bin", 3<<20+5)
	addr := startServer(t, root, "s3cret-token-0123456789abcdef")
	t.Setenv("GDSLOAD_TOKEN", "s3cret-token-0123456789abcdef")
	out, stderr, code := run(t, "bench", "--json", "--runs", "2", "rdmafs://"+addr+"/data.bin")
	require.Equal(t, 0, code, stderr)
	var rep benchReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Len(t, rep.Results, 1)
	require.Equal(t, "loader", rep.Results[0].Mode)
	require.Equal(t, int64(3<<20+5), rep.Results[0].Bytes)
	require.Equal(t, "needs a local file", rep.Skipped["posix"])

	_, stderr, code = run(t, "bench", "--cold", "rdmafs://"+addr+"/data.bin")
	require.Equal(t, 2, code, stderr)
}

// Over TCP a GPU destination goes through pinned buffers (bounce), even
// where cuFile could read local files directly.
func TestLoadFromRemoteToGPUThroughTestDouble(t *testing.T) {
	ctl := useFakeCUDA(t)
	require.NoError(t, ctl.Do("mode=nvfs"))
	root := t.TempDir()
	_, sum := writeFile(t, root, "w.bin", 3<<20+11)
	addr := startServer(t, root, "s3cret-token-0123456789abcdef")
	t.Setenv("GDSLOAD_TOKEN", "s3cret-token-0123456789abcdef")
	out, stderr, code := run(t, "load", "--to", "gpu:0", "--checksum", "sha256", "--json", "--chunk-size", "1M", "rdmafs://"+addr+"/w.bin")
	require.Equal(t, 0, code, stderr)
	var res loadJSON
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Len(t, res.Files, 1)
	require.Equal(t, "bounce", res.Files[0].Path)
	require.Equal(t, sum, res.Files[0].SHA256, "bytes copied back from the GPU")
	for _, c := range []string{"allocs", "pinned", "handles", "driver_refs"} {
		require.Zero(t, ctl.Counter(c), "%s released", c)
	}
}

// Without an RDMA build (or device) --transport verbs says so and names
// the TCP alternative, into host or GPU memory alike.
func TestLoadVerbsTransportUnavailable(t *testing.T) {
	useFakeCUDA(t)
	root := t.TempDir()
	writeFile(t, root, "w.bin", 10)
	addr := startServer(t, root, "s3cret-token-0123456789abcdef")
	t.Setenv("GDSLOAD_TOKEN", "s3cret-token-0123456789abcdef")
	for _, to := range []string{"host", "gpu:0"} {
		_, stderr, code := run(t, "load", "--transport", "verbs", "--to", to, "rdmafs://"+addr+"/w.bin")
		require.Equal(t, 1, code, stderr)
		require.Contains(t, stderr, "tcp", to)
	}
}
