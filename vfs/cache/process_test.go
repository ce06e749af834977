package cache

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Child processes of these tests are this test binary run again with
// childEnv naming what to do; they print their results on stdout.
const childEnv = "GDSLOAD_CACHE_TEST_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		if err := child(mode, os.Getenv("CACHE_DIR")); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

const (
	sharedFiles = 10
	sharedSize  = 200_000
	bigSize     = 1 << 20
)

func sharedName(i int) string { return fmt.Sprintf("s3://b/shard-%02d.tar", i) }

// child runs one process of a test: "share" reads every shared file
// through the cache and prints each file's SHA-256 and then its Stats;
// "stall" starts downloading the big file and hangs midway, after
// printing "stalled"; "big" reads the big file and prints its SHA-256 and
// Stats.
func child(mode, dir string) error {
	c, err := Open(dir, WithLimit(64<<20))
	if err != nil {
		return err
	}
	ctx := context.Background()
	out := bufio.NewWriter(os.Stdout)
	read := func(f *memFile) error {
		got, err := c.Serve(ctx, f)
		if err != nil {
			return err
		}
		defer got.Close()
		h := sha256.New()
		buf := make([]byte, got.Size())
		if _, err := got.ReadAt(buf, 0); err != nil {
			return err
		}
		h.Write(buf)
		fmt.Fprintf(out, "%s %s\n", f.name, hex.EncodeToString(h.Sum(nil)))
		return nil
	}
	switch mode {
	case "share":
		for i := range sharedFiles {
			if err := read(newMemFile(sharedName(i), content(sharedName(i), 1, sharedSize), nil)); err != nil {
				return err
			}
		}
	case "stall":
		c.chunk = 64 << 10
		f := newMemFile("s3://b/big", content("big", 1, bigSize), nil)
		f.stallAfter = bigSize / 2
		f.onStall = func() { fmt.Println("stalled") }
		_, err := c.Serve(ctx, f)
		return fmt.Errorf("the stalled download returned: %v", err)
	case "big":
		if err := read(newMemFile("s3://b/big", content("big", 1, bigSize), nil)); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown child mode %q", mode)
	}
	b, _ := json.Marshal(c.Stats())
	fmt.Fprintf(out, "stats %s\n", b)
	return out.Flush()
}

func startChild(t *testing.T, mode, dir string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode, "CACHE_DIR="+dir)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, bufio.NewScanner(stdout)
}

// childResults reads a finished child's lines: the SHA-256 of each file
// it read, and its Stats.
func childResults(t *testing.T, cmd *exec.Cmd, sc *bufio.Scanner) (map[string]string, Stats) {
	t.Helper()
	sums := map[string]string{}
	var st Stats
	for sc.Scan() {
		name, rest, _ := strings.Cut(sc.Text(), " ")
		if name == "stats" {
			require.NoError(t, json.Unmarshal([]byte(rest), &st))
			continue
		}
		sums[name] = rest
	}
	require.NoError(t, cmd.Wait())
	return sums, st
}

func sumOf(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func TestProcessesSharingAFolderDownloadEachFileOnce(t *testing.T) {
	dir := t.TempDir()
	type proc struct {
		cmd *exec.Cmd
		sc  *bufio.Scanner
	}
	var procs []proc
	for range 4 {
		cmd, sc := startChild(t, "share", dir)
		procs = append(procs, proc{cmd, sc})
	}
	var total Stats
	for rank, p := range procs {
		sums, st := childResults(t, p.cmd, p.sc)
		require.Len(t, sums, sharedFiles, "rank %d", rank)
		for i := range sharedFiles {
			assert.Equal(t, sumOf(content(sharedName(i), 1, sharedSize)), sums[sharedName(i)], "rank %d file %d", rank, i)
		}
		total.Misses += st.Misses
		total.Hits += st.Hits
		total.Bypassed += st.Bypassed
		total.BytesDownloaded += st.BytesDownloaded
	}
	assert.Equal(t, int64(sharedFiles), total.Misses, "each file downloaded by one process")
	assert.Equal(t, int64(3*sharedFiles), total.Hits)
	assert.Zero(t, total.Bypassed)
	assert.Equal(t, int64(sharedFiles*sharedSize), total.BytesDownloaded)
}

func TestKilledDownloaderIsTakenOverAndItsPartialCopyNeverServed(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(dir, WithLimit(64<<20))
	require.NoError(t, err)
	want := content("big", 1, bigSize)
	k := key("s3://b/big", newMemFile("s3://b/big", want, nil).Identity())

	stalled, sc := startChild(t, "stall", dir)
	require.True(t, sc.Scan(), "the downloading child never reached the middle of the file")
	require.Equal(t, "stalled", sc.Text())
	tmp := tmpFiles(t, dir)
	require.Len(t, tmp, 1, "the download under way is a temporary file")
	_, err = tryLock(c.lockPath(k), syscall.LOCK_SH)
	require.ErrorIs(t, err, errBusy, "the downloader holds the entry")

	waiter, wsc := startChild(t, "big", dir)
	require.NoError(t, stalled.Process.Signal(syscall.SIGKILL))
	_ = stalled.Wait()

	sums, st := childResults(t, waiter, wsc)
	assert.Equal(t, sumOf(want), sums["s3://b/big"], "the other process served the whole, right file")
	assert.Equal(t, int64(1), st.Misses, "it downloaded the file itself")
	assert.NotContains(t, tmpFiles(t, dir), tmp[0], "the dead process's partial file was removed")
	assert.Empty(t, tmpFiles(t, dir))
	require.Equal(t, want, serveBytes(t, c, newMemFile("s3://b/big", want, nil)))
	assert.Equal(t, int64(1), c.Stats().Hits)
}

func TestWaiterTakesTheLockOfAKilledProcess(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(dir, WithLimit(64<<20))
	require.NoError(t, err)
	stalled, sc := startChild(t, "stall", dir)
	require.True(t, sc.Scan())
	want := content("big", 1, bigSize)

	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		f, err := c.Serve(context.Background(), newMemFile("s3://b/big", want, nil))
		if err != nil {
			done <- result{err: err}
			return
		}
		defer f.Close()
		b := make([]byte, f.Size())
		_, err = f.ReadAt(b, 0)
		done <- result{b, err}
	}()
	// The waiter is blocked by the child's lock until the child dies.
	deadline := time.Now().Add(10 * time.Second)
	for c.waited.Load() == 0 && time.Now().Before(deadline) {
		select {
		case r := <-done:
			t.Fatalf("served while another process was downloading: %v", r.err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	require.NoError(t, stalled.Process.Signal(syscall.SIGKILL))
	r := <-done
	require.NoError(t, r.err)
	assert.Equal(t, want, r.b)
	assert.Equal(t, int64(1), c.Stats().Misses)
	assert.Positive(t, c.Stats().Waited)
}
