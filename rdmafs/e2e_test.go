package rdmafs

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// binDir holds the helper programs the tests build (testserver,
// benchclient); TestMain makes it and removes it after the run.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "rdmafs-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Each helper program is built once per run, by the first test that needs
// it.
var (
	buildTestServer  = sync.OnceValues(func() (string, error) { return goBuild("testserver") })
	buildBenchClient = sync.OnceValues(func() (string, error) { return goBuild("benchclient") })
)

// goBuild builds ./internal/name into binDir and returns its path.
func goBuild(name string) (string, error) {
	bin := filepath.Join(binDir, name)
	out, err := exec.Command("go", "build", "-o", bin, "./internal/"+name).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build ./internal/%s: %w\n%s", name, err, out)
	}
	return bin, nil
}

// helperBinary returns the program build built, failing t where it did not
// build: a compile error in the project is a failure, never a skip.
func helperBinary(t *testing.T, build func() (string, error)) string {
	t.Helper()
	bin, err := build()
	require.NoError(t, err)
	return bin
}

type serverProc struct {
	cmd  *exec.Cmd
	addr string
	exit chan error
}

// startProc runs the testserver binary exporting root and waits for its
// "listening on" line.
func startProc(t *testing.T, root, listen string) *serverProc {
	t.Helper()
	bin := helperBinary(t, buildTestServer)
	tokFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokFile, append(testTok, '\n'), 0o600))
	cmd := exec.Command(bin, "--root", root, "--listen", listen, "--token-file", tokFile)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	p := &serverProc{cmd: cmd, exit: make(chan error, 1)}
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(stdout)
		if s.Scan() {
			line <- s.Text()
		}
		close(line)
		io.Copy(io.Discard, stdout)
		p.exit <- cmd.Wait()
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.exit
		p.exit <- nil
	})
	select {
	case l, ok := <-line:
		// The check is an if: an assertion's message, stderr while the
		// server runs, would be read on success too (a data race).
		if !ok || !strings.HasPrefix(l, "listening on ") {
			require.FailNow(t, "the server did not say where it listens", "server said %q; stderr:\n%s", l, stderr.String())
		}
		p.addr = strings.TrimPrefix(l, "listening on ")
	case <-time.After(10 * time.Second):
		require.FailNow(t, "server not ready after 10 s", "stderr:\n%s", stderr.String())
	}
	return p
}

func TestE2EServerProcess(t *testing.T) {
	root := t.TempDir()
	data := writeFile(t, root, "ckpt/shard-0.bin", 3<<20+11, 4)
	p := startProc(t, root, "127.0.0.1:0")
	ctx := context.Background()
	cl, err := Dial(ctx, p.addr, WithToken(testTok), WithLogger(quietLogger()), WithChunkSize(1<<20))
	require.NoError(t, err)
	defer cl.Close()
	f, err := cl.Open(ctx, "ckpt/shard-0.bin")
	require.NoError(t, err)
	got := make([]byte, f.Size())
	_, err = f.ReadAt(got, 0)
	require.NoError(t, err, "read through real server: %v", err)
	require.True(t, bytes.Equal(got, data), "read through real server: %v", err)
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-p.exit:
		p.exit <- err
		require.NoError(t, err, "server exit after SIGTERM: %v, want status 0", err)
	case <-time.After(10 * time.Second):
		require.FailNow(t, "server did not exit within 10 s of SIGTERM")
	}
}

// TestE2EServerKilledMidTransfer kills the server process (SIGKILL) while
// reads are in flight. Without a restart the reader fails with
// ErrServerGone within its retry deadline; with a restart on the same port
// the retries succeed and every byte is verified.
func TestE2EServerKilledMidTransfer(t *testing.T) {
	root := t.TempDir()
	data := writeFile(t, root, "f", 16<<20, 6)
	for _, restart := range []bool{false, true} {
		t.Run(fmt.Sprintf("restart=%v", restart), func(t *testing.T) {
			p := startProc(t, root, "127.0.0.1:0")
			retry := 1500 * time.Millisecond
			if restart {
				retry = 15 * time.Second
			}
			cl, err := Dial(context.Background(), p.addr, WithToken(testTok), WithLogger(quietLogger()),
				WithRetryDeadline(retry), WithTimeout(5*time.Second), WithChunkSize(1<<20))
			require.NoError(t, err)
			defer cl.Close()
			f, err := cl.Open(context.Background(), "f")
			require.NoError(t, err)
			result := make(chan error, 1)
			first := make(chan struct{})
			go func() {
				buf := make([]byte, len(data))
				for i := 0; ; i++ {
					if i == 1 {
						close(first)
					}
					clear(buf)
					if _, err := f.ReadAt(buf, 0); err != nil {
						result <- err
						return
					}
					if !bytes.Equal(buf, data) {
						result <- errors.New("data mismatch")
						return
					}
					if restart && i >= 20 {
						result <- nil
						return
					}
				}
			}()
			<-first
			killedAt := time.Now()
			p.cmd.Process.Kill()
			<-p.exit
			p.exit <- nil
			if restart {
				time.Sleep(200 * time.Millisecond)
				startProc(t, root, p.addr)
			}
			select {
			case err := <-result:
				if restart {
					require.NoError(t, err, "reads across a restart")
				} else {
					require.ErrorIs(t, err, ErrServerGone)
					require.LessOrEqual(t, time.Since(killedAt), retry+2*time.Second, "failed after %v, retry deadline %v", time.Since(killedAt), retry)
				}
			case <-time.After(retry + 10*time.Second):
				require.FailNow(t, "reader hung after the server was killed")
			}
		})
	}
}
