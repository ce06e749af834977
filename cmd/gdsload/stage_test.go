package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gdsload/gdsload/internal/durable"
	"github.com/gdsload/gdsload/stage"
	"github.com/stretchr/testify/require"
)

// runStageCmd runs `gdsload stage ARGS` in-process, wiring the command into
// the root when the root does not have it yet.
func runStageCmd(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	root := newRootCmd()
	if c, _, err := root.Find([]string{"stage"}); err != nil || c.Name() != "stage" {
		root.AddCommand(newStageCmd())
	}
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs(append([]string{"stage"}, args...))
	err := root.ExecuteContext(context.Background())
	code := exitCode(err, false, &errb)
	return out.String(), errb.String(), code
}

type stageJSON struct {
	Files   int     `json:"files"`
	Bytes   int64   `json:"bytes"`
	Copied  int     `json:"copied"`
	Skipped int     `json:"skipped"`
	Seconds float64 `json:"seconds"`
	GiBPerS float64 `json:"gib_per_s"`
	Entries []struct {
		Name   string `json:"name"`
		Status string `json:"status"`
		Digest string `json:"digest"`
	} `json:"entries"`
}

func TestStageCommandJSON(t *testing.T) {
	src, dst := t.TempDir(), filepath.Join(t.TempDir(), "nvme")
	want := map[string]string{}
	for name, n := range map[string]int{"a.bin": 0, "sub/b.bin": 4097, "sub/c.bin": 3<<20 + 5} {
		_, sum := writeFile(t, src, name, n)
		want[name] = sum
	}
	out, stderr, code := runStageCmd(t, "--json", "--workers", "3", "--chunk-size", "1M", "--verify", "readback", src, dst)
	require.Equal(t, 0, code, stderr)
	var res stageJSON
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	require.Equal(t, 3, res.Files)
	require.Equal(t, 3, res.Copied)
	require.EqualValues(t, 4097+3<<20+5, res.Bytes)
	for _, e := range res.Entries {
		require.Equal(t, want[e.Name], e.Digest, e.Name)
		b, err := os.ReadFile(filepath.Join(dst, e.Name))
		require.NoError(t, err)
		require.Len(t, b, map[string]int{"a.bin": 0, "sub/b.bin": 4097, "sub/c.bin": 3<<20 + 5}[e.Name])
	}

	out, stderr, code = runStageCmd(t, src, dst)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "skipped    3 files already staged and verified")
}

func TestStageCommandErrors(t *testing.T) {
	p, _ := writeFile(t, t.TempDir(), "x.bin", 10)
	dst := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"one arg", []string{dst}, 2, "requires at least 2 arg"},
		{"bad checksum", []string{"--checksum", "none", p, dst}, 2, "staging always verifies"},
		{"bad verify", []string{"--verify", "maybe", p, dst}, 2, "want digest or readback"},
		{"bad gpu", []string{p, "gpu:x"}, 2, "want a directory, gpu:N, gpu:N,M,... or gpu:all"},
		{"missing source", []string{"/nonexistent/x.bin", dst}, 1, "source /nonexistent/x.bin does not exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := runStageCmd(t, tc.args...)
			require.Equal(t, tc.code, code, stderr)
			require.Contains(t, stderr, tc.msg)
		})
	}
}

// buildStageBinary builds the real gdsload; a failed build fails the test
// and shows the compiler's output.
func buildStageBinary(t *testing.T) string {
	t.Helper()
	return gdsloadBinary(t)
}

// TestStageSurvivesKill stages 40 files, SIGKILLs the real binary at random
// points several times, and checks that every file under a final name is
// complete, that the last run copies exactly what was missing, and that
// files staged earlier keep their inode and mtime.
func TestStageSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildStageBinary(t)
	src, dst := t.TempDir(), t.TempDir()
	sums := map[string]string{}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 40 {
		name := fmt.Sprintf("shard-%02d.bin", i)
		_, sums[name] = writeFile(t, src, name, 1<<20+rng.IntN(2<<20))
	}
	// checkFinal fails on a final name that does not hold its source's bytes.
	checkFinal := func() map[string]identity {
		present := map[string]identity{}
		ents, err := os.ReadDir(dst)
		require.NoError(t, err)
		for _, e := range ents {
			if e.IsDir() || durable.IsTempName(e.Name()) {
				continue
			}
			_, sum := fileSum(t, filepath.Join(dst, e.Name()))
			require.Equal(t, sums[e.Name()], sum, "%s under its final name is not its source", e.Name())
			present[e.Name()] = identify(t, filepath.Join(dst, e.Name()))
		}
		return present
	}
	// finals counts the files under final names.
	finals := func() int {
		n := 0
		ents, _ := os.ReadDir(dst)
		for _, e := range ents {
			if !e.IsDir() && !durable.IsTempName(e.Name()) {
				n++
			}
		}
		return n
	}
	killed := 0
	for round := range 8 {
		// Kill once a few more files are final, so every round dies in
		// the middle of a batch; the first round dies right at the start.
		target := finals() + 1 + rng.IntN(4)
		if round == 0 || target > 30 {
			target = 0 // leave files for the last run to copy
		}
		cmd := exec.Command(bin, "stage", "--workers", "2", "--chunk-size", "256KiB", src, dst)
		require.NoError(t, cmd.Start())
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
	poll:
		for finals() < target {
			select {
			case <-exited:
				break poll
			case <-time.After(time.Millisecond):
			}
		}
		time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-exited
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			killed++
		}
		checkFinal()
	}
	present := checkFinal()
	t.Logf("%d of 8 rounds killed; %d of 40 files staged before the last run", killed, len(present))
	require.GreaterOrEqual(t, killed, 4, "too few runs were killed to test anything")
	// On a loaded machine a round may finish before its kill lands; two
	// files no round has seen keep the last run's copy-what-is-missing
	// check meaningful whatever the rounds left.
	for i := 40; i < 42; i++ {
		name := fmt.Sprintf("shard-%02d.bin", i)
		_, sums[name] = writeFile(t, src, name, 1<<20+rng.IntN(2<<20))
	}

	out, err := exec.Command(bin, "stage", "--json", src, dst).Output()
	require.NoError(t, err)
	var res stageJSON
	require.NoError(t, json.Unmarshal(out, &res))
	require.Equal(t, 42, res.Files)
	require.Equal(t, 42-len(present), res.Copied, "the rerun copies only what was missing")
	require.Equal(t, len(present), res.Skipped)
	for _, e := range res.Entries {
		if id, ok := present[e.Name]; ok {
			require.Equal(t, stage.StatusSkipped, e.Status, e.Name)
			require.Equal(t, id, identify(t, filepath.Join(dst, e.Name)), "%s was rewritten", e.Name)
		}
	}
	require.Len(t, checkFinal(), 42)
	require.NoError(t, filepath.Walk(dst, func(p string, fi os.FileInfo, err error) error {
		if err == nil && durable.IsTempName(fi.Name()) {
			t.Errorf("temporary file %s left after the final run", p)
		}
		return err
	}))
}

type identity struct {
	ino   uint64
	mtime time.Time
}

func identify(t *testing.T, p string) identity {
	t.Helper()
	st, err := os.Stat(p)
	require.NoError(t, err)
	return identity{ino: st.Sys().(*syscall.Stat_t).Ino, mtime: st.ModTime()}
}

func fileSum(t *testing.T, p string) (string, string) {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	sum := sha256.Sum256(b)
	return p, hex.EncodeToString(sum[:])
}

// TestStageFromRemoteServerProcess stages a directory exported by a real
// `gdsload serve` process, then reruns: the remote modification times let
// the rerun skip everything. Names with bytes URLs escape ('%', '?', '#',
// spaces) travel through the URLs built for listed files.
func TestStageFromRemoteServerProcess(t *testing.T) {
	export, dst := t.TempDir(), t.TempDir()
	want := map[string]string{}
	for name, n := range map[string]int{
		"ckpt/a.bin": 5<<20 + 3, "ckpt/sub/b.bin": 4096, "ckpt/c.bin": 0,
		"ckpt/100%.bin": 77, "ckpt/what?#1.bin": 4097, "ckpt/sp ace/x y.bin": 1,
	} {
		_, want[strings.TrimPrefix(name, "ckpt/")] = writeFile(t, export, name, n)
	}
	token := "stage-e2e-token-0123456789abcdef"
	addr := startServer(t, export, token)
	tok := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tok, []byte(token+"\n"), 0o600))

	out, stderr, code := runStageCmd(t, "--json", "--token-file", tok, "rdmafs://"+addr+"/ckpt", dst)
	require.Equal(t, 0, code, stderr)
	var res stageJSON
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	require.Equal(t, len(want), res.Copied)
	for name, sum := range want {
		_, got := fileSum(t, filepath.Join(dst, name))
		require.Equal(t, sum, got, name)
	}

	out, stderr, code = runStageCmd(t, "--json", "--token-file", tok, "rdmafs://"+addr+"/ckpt", dst)
	require.Equal(t, 0, code, stderr)
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	require.Zero(t, res.Copied)
	require.Equal(t, len(want), res.Skipped)
}

// TestStagePermissionDenied runs the real binary as an unprivileged user
// (nobody, when the tests run as root): a destination it may not create and
// a source it may not read are clear errors that say what to do, and leave
// no file behind.
func TestStagePermissionDenied(t *testing.T) {
	bin := gdsloadBinary(t)
	base := t.TempDir()
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
	}
	// The unprivileged user must reach the binary and the test folders.
	for _, d := range []string{filepath.Dir(bin), filepath.Dir(base), base} {
		require.NoError(t, os.Chmod(d, 0o755))
	}
	src := filepath.Join(base, "src")
	require.NoError(t, os.Mkdir(src, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "a.bin"), []byte("readable"), 0o644))
	locked := filepath.Join(base, "locked")
	require.NoError(t, os.Mkdir(locked, 0o555))
	open := filepath.Join(base, "open")
	require.NoError(t, os.Mkdir(open, 0o777))
	require.NoError(t, os.Chmod(open, 0o777)) // past the umask

	stageAs := func(args ...string) (string, int) {
		cmd := exec.Command(bin, append([]string{"stage"}, args...)...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("running %s: %v", bin, err)
		}
		return string(out), code
	}

	out, code := stageAs(src, filepath.Join(locked, "dst"))
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "permission denied; fix its permissions or stage elsewhere")

	secret := filepath.Join(src, "secret.bin")
	require.NoError(t, os.WriteFile(secret, []byte("not for you"), 0o600))
	if cred == nil {
		require.NoError(t, os.Chmod(secret, 0))
	}
	// The unreadable file fails alone: the other is staged, the failure
	// listed, and the exit code says partial.
	dst := filepath.Join(open, "dst")
	out, code = stageAs(src, dst)
	require.Equal(t, 3, code, out)
	require.Contains(t, out, "1 of 2 files could not be staged")
	require.Contains(t, out, "secret.bin")
	require.Contains(t, strings.ToLower(out), "permission denied")
	got, err := os.ReadFile(filepath.Join(dst, "a.bin"))
	require.NoError(t, err)
	require.Equal(t, "readable", string(got))
	noneLeft := func(dst string) {
		filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && (d.Name() == "secret.bin" || durable.IsTempName(d.Name())) {
				t.Errorf("%s left behind", p)
			}
			return nil
		})
	}
	noneLeft(dst)

	// --fail-fast stops at it: exit 1, nothing of it left.
	dst = filepath.Join(open, "dst2")
	out, code = stageAs("--fail-fast", src, dst)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "secret.bin")
	noneLeft(dst)
}

// stage --dry-run says what a run would copy and skip, and changes
// nothing: no destination folder, no journal rewrite.
func TestStageDryRun(t *testing.T) {
	src, base := t.TempDir(), t.TempDir()
	writeFile(t, src, "a.bin", 5000)
	writeFile(t, src, "sub/b.bin", 100)
	dst := filepath.Join(base, "out")

	var prev previewJSON
	out, stderr, code := runStageCmd(t, "--dry-run", "--json", src, dst)
	require.Equal(t, 0, code, stderr)
	require.NoError(t, json.Unmarshal([]byte(out), &prev), out)
	require.True(t, prev.DryRun)
	require.Equal(t, 2, prev.CopyFiles)
	require.EqualValues(t, 5100, prev.CopyBytes)
	_, err := os.Stat(dst)
	require.ErrorIs(t, err, fs.ErrNotExist, "a dry run must not create the destination")

	_, stderr, code = runStageCmd(t, src, dst)
	require.Equal(t, 0, code, stderr)
	journal := filepath.Join(dst, stage.SidecarName, "journal.jsonl")
	before, err := os.ReadFile(journal)
	require.NoError(t, err)
	writeFile(t, src, "c.bin", 7)
	out, stderr, code = runStageCmd(t, "--dry-run", "--json", src, dst)
	require.Equal(t, 0, code, stderr)
	require.NoError(t, json.Unmarshal([]byte(out), &prev), out)
	require.Equal(t, 1, prev.CopyFiles)
	require.Equal(t, 2, prev.SkipFiles)
	for _, e := range prev.Entries {
		require.Equal(t, map[bool]string{true: "copy", false: "skip"}[e.Name == "c.bin"], e.Action, e.Name)
	}
	after, err := os.ReadFile(journal)
	require.NoError(t, err)
	require.Equal(t, before, after, "a dry run must not rewrite the journal")
	_, err = os.Stat(filepath.Join(dst, "c.bin"))
	require.ErrorIs(t, err, fs.ErrNotExist)

	out, stderr, code = runStageCmd(t, "--dry-run", src, dst)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "copy  c.bin")
	require.Contains(t, out, "would copy 1 file (7 B)")

	_, stderr, code = runStageCmd(t, "--dry-run", src, "gpu:0")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "--dry-run applies to directory destinations")
}

// stage --reverify re-hashes staged files: one damaged in place, its mtime
// restored, is staged again and reported.
func TestStageReverifyCmd(t *testing.T) {
	src, dst := t.TempDir(), filepath.Join(t.TempDir(), "out")
	writeFile(t, src, "a.bin", 5000)
	writeFile(t, src, "b.bin", 7000)
	_, errb, code := runStageCmd(t, src, dst)
	require.Equal(t, 0, code, errb)
	victim := filepath.Join(dst, "b.bin")
	st, err := os.Stat(victim)
	require.NoError(t, err)
	f, err := os.OpenFile(victim, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte{0xff}, 10)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.NoError(t, os.Chtimes(victim, st.ModTime(), st.ModTime()))

	out, errb, code := runStageCmd(t, "--reverify", src, dst)
	require.Equal(t, 0, code, errb)
	require.Regexp(t, `damaged +1 file changed in place since staged \(re-verify\): staged again`, out)
	require.Regexp(t, `copied +1 file,`, out)
	got, err := os.ReadFile(victim)
	require.NoError(t, err)
	want, err := os.ReadFile(filepath.Join(src, "b.bin"))
	require.NoError(t, err)
	require.Equal(t, want, got)
}
