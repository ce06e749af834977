package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gdsload/gdsload/rdmafs"
)

func TestServeCmdListensAndDrains(t *testing.T) {
	tok := filepath.Join(t.TempDir(), "tok")
	if err := os.WriteFile(tok, []byte("0123456789abcdef0123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GDSLOAD_TOKEN", "")
	os.Unsetenv("GDSLOAD_TOKEN")
	serveAndStat(t, "--token-file", tok, "--metrics-listen", "127.0.0.1:0")
}

// The server takes its token from GDSLOAD_TOKEN, as clients do, and reads
// --buffer-size with a unit like the other size flags.
func TestServeCmdTokenFromEnvAndSizeUnits(t *testing.T) {
	t.Setenv("GDSLOAD_TOKEN", "0123456789abcdef0123\n")
	serveAndStat(t, "--buffer-size", "1MiB")
}

// serve takes any congestion control name, and keeps serving when the
// kernel lacks it.
func TestServeCmdTCPCongestion(t *testing.T) {
	t.Setenv("GDSLOAD_TOKEN", "0123456789abcdef0123\n")
	for _, cc := range []string{"reno", "system", "no_such_cc"} {
		serveAndStat(t, "--tcp-congestion", cc)
	}
}

// serveAndStat runs serve with args, stats a file through it with the
// token 0123456789abcdef0123, and checks that serve drains on cancel.
func serveAndStat(t *testing.T, args ...string) {
	t.Helper()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "f"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	cmd := newServeCmd()
	cmd.SetArgs(append([]string{"--root", root, "--listen", "127.0.0.1:0"}, args...))
	cmd.SetOut(pw)
	cmd.SetErr(io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx); pw.Close() }()
	sc := bufio.NewScanner(pr)
	if !sc.Scan() || !strings.HasPrefix(sc.Text(), "listening on 127.0.0.1:") || strings.HasSuffix(sc.Text(), ":0") {
		t.Fatalf("first stdout line %q", sc.Text())
	}
	addr := strings.TrimPrefix(sc.Text(), "listening on ")
	go io.Copy(io.Discard, pr)
	cl, err := rdmafs.Dial(ctx, addr, rdmafs.WithToken([]byte("0123456789abcdef0123")))
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := cl.Stat(ctx, "f"); err != nil || fi.Size() != 5 {
		t.Fatalf("stat through serve: %v", err)
	}
	cl.Close()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve returned %v after cancel, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not drain within 10 s")
	}
}

func TestServeCmdRefusals(t *testing.T) {
	root := t.TempDir()
	loose := filepath.Join(t.TempDir(), "tok")
	if err := os.WriteFile(loose, []byte("0123456789abcdef0123\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no token", []string{"--root", root, "--listen", "127.0.0.1:0"}, "--insecure-no-token"},
		{"loose token file", []string{"--root", root, "--listen", "127.0.0.1:0", "--token-file", loose}, "chmod 600"},
		{"verbs without rdma", []string{"--root", root, "--listen", "127.0.0.1:0", "--insecure-no-token", "--transport", "verbs"}, "use the tcp transport"},
		{"missing root", []string{"--root", filepath.Join(root, "nope"), "--listen", "127.0.0.1:0", "--insecure-no-token"}, "export root"},
		{"buffer size not a size", []string{"--root", root, "--listen", "127.0.0.1:0", "--insecure-no-token", "--buffer-size", "lots"}, "--buffer-size"},
		{"buffer size too small", []string{"--root", root, "--listen", "127.0.0.1:0", "--insecure-no-token", "--buffer-size", "1KiB"}, "--buffer-size"},
		{"congestion control not a name", []string{"--root", root, "--listen", "127.0.0.1:0", "--insecure-no-token", "--tcp-congestion", "Cubic!"}, "--tcp-congestion"},
	}
	t.Setenv("GDSLOAD_TOKEN", "")
	os.Unsetenv("GDSLOAD_TOKEN")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd := newServeCmd()
			cmd.SetArgs(tc.args)
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := cmd.ExecuteContext(ctx)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

func TestServeCmdEnvTokenAndInsecureExclusive(t *testing.T) {
	t.Setenv("GDSLOAD_TOKEN", "0123456789abcdef0123")
	cmd := newServeCmd()
	cmd.SetArgs([]string{"--root", t.TempDir(), "--listen", "127.0.0.1:0", "--insecure-no-token"})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	if err := cmd.ExecuteContext(context.Background()); err == nil || !strings.Contains(err.Error(), "GDSLOAD_TOKEN is set") {
		t.Fatalf("err = %v, want the env token and --insecure-no-token refused together", err)
	}
}
