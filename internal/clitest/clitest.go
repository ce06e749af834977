// Package clitest runs the real gdsload binary for end-to-end tests: it
// builds cmd/gdsload once per test process and starts `gdsload serve` as a
// separate process, as users run it. Only tests import it.
package clitest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	once     sync.Once
	binary   string
	errBuild error
)

// dir holds the binary this test process built; Cleanup removes it.
func dir() string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("gdsload-test-bin-%d", os.Getpid()))
}

// Binary builds cmd/gdsload once per test process (pkg is the path of
// that package relative to the test's directory, "." from cmd/gdsload)
// and returns the binary. A failed build fails the test with the
// compiler's output.
func Binary(t testing.TB, pkg string) string {
	t.Helper()
	once.Do(func() {
		if err := os.MkdirAll(dir(), 0o755); err != nil {
			errBuild = err
			return
		}
		binary = filepath.Join(dir(), "gdsload")
		if out, err := exec.Command("go", "build", "-o", binary, pkg).CombinedOutput(); err != nil {
			errBuild = fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
		}
	})
	require.NoError(t, errBuild, "building gdsload failed")
	return binary
}

// Cleanup removes what Binary built; call it from TestMain after m.Run.
func Cleanup() { _ = os.RemoveAll(dir()) }

// Serve runs `bin serve` exporting root with token and returns the
// address it listens on (127.0.0.1, a port of its choosing) and the
// process. At the end of the test the server gets SIGTERM and must drain
// and exit 0 within 10 s.
func Serve(t testing.TB, bin, root string, token []byte) (string, *os.Process) {
	t.Helper()
	tok := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tok, append(token, '\n'), 0o600))
	cmd := exec.Command(bin, "serve", "--root", root, "--listen", "127.0.0.1:0", "--token-file", tok)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default: // only the first line matters
			}
		}
		close(lines)
	}()
	var addr string
	select {
	case line, ok := <-lines:
		if !ok || !strings.HasPrefix(line, "listening on ") {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			require.Failf(t, "serve did not say where it listens", "%q: %s", line, stderr.String())
		}
		addr = strings.TrimPrefix(line, "listening on ")
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		require.FailNow(t, "serve did not listen within 20 s")
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			assert.NoError(t, err, "serve exits 0 on SIGTERM: %v: %s", err, stderr.String())
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			assert.Fail(t, "serve did not drain and exit within 10 s of SIGTERM")
		}
	})
	return addr, cmd.Process
}
