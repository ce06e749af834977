//go:build linux

package rdmafs

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gdsload/gdsload/internal/testenv"
	"github.com/stretchr/testify/require"
)

// TestPacketLossBetweenNamespaces runs the server and a client in two
// network namespaces joined by a veth pair, with iptables `statistic`
// rules dropping 5% of TCP segments in each direction on the server side
// (this kernel has no netem). The client must still read a 32 MiB file with
// every request's CRC32C verified. Needs root, ip and iptables; skips with
// the reason otherwise (fails under GDSLOAD_REQUIRE_TOOLS). Everything it creates (namespaces, veth, rules) lives
// inside its own namespaces and is removed afterwards.
func TestPacketLossBetweenNamespaces(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the network-namespace test")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root for ip netns and iptables")
	}
	testenv.Tool(t, "ip", "iproute2")
	testenv.Tool(t, "iptables", "iptables")
	testServer := helperBinary(t, buildTestServer)
	bench := helperBinary(t, buildBenchClient)

	id := os.Getpid() % 100000
	nsS, nsC := fmt.Sprintf("rdmafs-s%d", id), fmt.Sprintf("rdmafs-c%d", id)
	vS, vC := fmt.Sprintf("rfs%d", id), fmt.Sprintf("rfc%d", id)
	run := func(args ...string) error {
		out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := run("ip", "netns", "add", nsS); err != nil {
		testenv.Missing(t, "cannot create a network namespace here: %v", err)
	}
	t.Cleanup(func() { run("ip", "netns", "del", nsS) })
	require.NoError(t, run("ip", "netns", "add", nsC))
	t.Cleanup(func() { run("ip", "netns", "del", nsC) }) // also removes the veth pair
	setup := [][]string{
		{"ip", "link", "add", vS, "netns", nsS, "type", "veth", "peer", "name", vC, "netns", nsC},
		{"ip", "-n", nsS, "addr", "add", "10.231.0.1/30", "dev", vS},
		{"ip", "-n", nsC, "addr", "add", "10.231.0.2/30", "dev", vC},
		{"ip", "-n", nsS, "link", "set", vS, "up"},
		{"ip", "-n", nsC, "link", "set", vC, "up"},
		{"ip", "-n", nsS, "link", "set", "lo", "up"},
		{"ip", "-n", nsC, "link", "set", "lo", "up"},
	}
	for _, c := range setup {
		require.NoError(t, run(c...))
	}
	for _, chain := range []string{"INPUT", "OUTPUT"} {
		if err := run("ip", "netns", "exec", nsS, "iptables", "-A", chain, "-p", "tcp",
			"-m", "statistic", "--mode", "random", "--probability", "0.05", "-j", "DROP"); err != nil {
			testenv.Missing(t, "iptables statistic match unusable here (install iptables with its xt_statistic module): %v", err)
		}
	}

	root := t.TempDir()
	writeFile(t, root, "f", 32<<20, 11)
	tok := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tok, testTok, 0o600))
	srv := exec.Command("ip", "netns", "exec", nsS, testServer, "--root", root, "--listen", "10.231.0.1:0", "--token-file", tok)
	stdout, _ := srv.StdoutPipe()
	require.NoError(t, srv.Start())
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	sc := bufio.NewScanner(stdout)
	lineCh := make(chan string, 1)
	go func() {
		if sc.Scan() {
			lineCh <- sc.Text()
		}
		close(lineCh)
	}()
	var addr string
	select {
	case l := <-lineCh:
		addr = strings.TrimPrefix(l, "listening on ")
	case <-time.After(10 * time.Second):
		require.FailNow(t, "server in namespace not ready after 10 s")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := exec.CommandContext(ctx, "ip", "netns", "exec", nsC, bench, "--url", "rdmafs://"+addr+"/f",
		"--token-file", tok, "--conns", "2", "--chunk", "1048576", "--window", "8388608")
	out, err := cl.CombinedOutput()
	require.NoError(t, err, "client under 5%% loss each way: %v\n%s", err, out)
	t.Logf("under 5%% loss each way: %s", strings.TrimSpace(string(out)))
	// The test proves something only if segments were really dropped.
	for _, chain := range []string{"INPUT", "OUTPUT"} {
		cnt, err := exec.Command("ip", "netns", "exec", nsS, "iptables", "-nvxL", chain).Output()
		require.NoError(t, err)
		dropped := int64(-1)
		for _, l := range strings.Split(string(cnt), "\n") {
			if f := strings.Fields(l); len(f) > 2 && f[2] == "DROP" {
				fmt.Sscan(f[0], &dropped)
			}
		}
		require.Greater(t, dropped, int64(0), "no %s segments dropped (%d): the loss rules did not apply\n%s", chain, dropped, cnt)
		t.Logf("%s: %d segments dropped", chain, dropped)
	}
}
