package miniotest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// startTimeout bounds how long a cluster may take to serve requests.
const startTimeout = 60 * time.Second

// Cluster is a running MinIO deployment: one node, or several forming one
// erasure-coded pool. Stop kills every process it started.
type Cluster struct {
	bin   string
	dir   string
	nodes []*node
}

type node struct {
	addr string // 127.0.0.1:port
	dir  string // its drive folder
	log  string // its output

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// Start starts a deployment of n nodes under dir (n = 1: a single server;
// n ≥ 4: distributed with erasure coding) on free loopback ports and waits
// until it accepts writes. Ports are picked at run time; when another
// process takes one before MinIO binds it, Start tries again with new
// ones.
func Start(dir string, n int) (*Cluster, error) {
	if n != 1 && n < 4 {
		return nil, fmt.Errorf("miniotest: %d nodes; MinIO runs 1, or 4 and more for erasure coding", n)
	}
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	var last error
	for attempt := range 3 {
		c := &Cluster{bin: bin, dir: filepath.Join(dir, fmt.Sprintf("try%d", attempt))}
		if last = c.start(n); last == nil {
			return c, nil
		}
		c.Stop()
	}
	return nil, last
}

func (c *Cluster) start(n int) error {
	addrs, err := freeAddrs(n)
	if err != nil {
		return err
	}
	for i, a := range addrs {
		nd := &node{addr: a, dir: filepath.Join(c.dir, fmt.Sprintf("n%d", i+1)), log: filepath.Join(c.dir, fmt.Sprintf("n%d.log", i+1))}
		if err := os.MkdirAll(nd.dir, 0o755); err != nil {
			return err
		}
		c.nodes = append(c.nodes, nd)
	}
	for i := range c.nodes {
		if err := c.launch(i); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	return c.WaitReady(ctx)
}

// args are a node's command line: its own address and, when distributed,
// every node's drive (the same list on every node).
func (c *Cluster) args(i int) []string {
	args := []string{"server", "--quiet", "--address", c.nodes[i].addr, "--certs-dir", filepath.Join(c.dir, "certs")}
	if len(c.nodes) == 1 {
		return append(args, c.nodes[0].dir)
	}
	for _, nd := range c.nodes {
		args = append(args, "http://"+nd.addr+nd.dir)
	}
	return args
}

// launch starts node i's process. MINIO_CI_CD and _MINIO_SERVER_LOCAL make
// a distributed MinIO accept loopback hosts and drives on the root file
// system, and tell each process which endpoint is its own.
func (c *Cluster) launch(i int) error {
	nd := c.nodes[i]
	logf, err := os.OpenFile(nd.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(c.bin, c.args(i)...)
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + c.dir,
		"MINIO_ROOT_USER=" + AccessKey,
		"MINIO_ROOT_PASSWORD=" + SecretKey,
		"MINIO_BROWSER=off",
		"MINIO_UPDATE=off",
		"MINIO_CI_CD=1",
		"MINIO_PROMETHEUS_AUTH_TYPE=public", // Traffic reads the metrics
	}
	if len(c.nodes) > 1 {
		cmd.Env = append(cmd.Env, "_MINIO_SERVER_LOCAL="+nd.addr)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	// Killed with the test binary, whatever way it ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("miniotest: starting %s: %w", c.bin, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	nd.mu.Lock()
	nd.cmd, nd.done = cmd, done
	nd.mu.Unlock()
	return nil
}

// WaitReady waits until the deployment accepts writes (MinIO's cluster
// health check answers 200 on the first node), or a node process exits.
func (c *Cluster) WaitReady(ctx context.Context) error {
	url := "http://" + c.nodes[0].addr + "/minio/health/cluster"
	hc := &http.Client{Timeout: time.Second}
	for {
		for i, nd := range c.nodes {
			if !nd.running() && nd.started() {
				return fmt.Errorf("miniotest: node %d (%s) exited while starting:\n%s", i+1, nd.addr, tail(nd.log))
			}
		}
		if resp, err := hc.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("miniotest: %d-node MinIO not ready (%s) within the deadline:\n%s", len(c.nodes), url, tail(c.nodes[0].log))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Endpoint is the base URL of node 0, where clients send requests.
func (c *Cluster) Endpoint() string { return "http://" + c.nodes[0].addr }

// Addr is node i's host:port.
func (c *Cluster) Addr(i int) string { return c.nodes[i].addr }

// Nodes is the number of nodes.
func (c *Cluster) Nodes() int { return len(c.nodes) }

// Kill kills node i with SIGKILL (no graceful shutdown, as a crash or a
// power cut) and waits for the process to be gone.
func (c *Cluster) Kill(i int) {
	c.nodes[i].kill()
}

// Restart starts node i again after Kill, on the same port and drive, and
// waits until the deployment accepts writes.
func (c *Cluster) Restart(ctx context.Context, i int) error {
	c.nodes[i].kill()
	if err := c.launch(i); err != nil {
		return err
	}
	return c.WaitReady(ctx)
}

// Stop kills every node.
func (c *Cluster) Stop() {
	for _, nd := range c.nodes {
		nd.kill()
	}
}

func (nd *node) kill() {
	nd.mu.Lock()
	cmd, done := nd.cmd, nd.done
	nd.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Kill()
	<-done
}

func (nd *node) started() bool {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	return nd.cmd != nil
}

func (nd *node) running() bool {
	nd.mu.Lock()
	done := nd.done
	nd.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// freeAddrs picks n distinct free loopback ports, holding each until all
// are picked.
func freeAddrs(n int) ([]string, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var addrs []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("miniotest: no free loopback port: %w", err)
		}
		ls = append(ls, l)
		addrs = append(addrs, "127.0.0.1:"+strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
	}
	return addrs, nil
}

// tail is the end of a node's log, for errors.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-20):], "\n")
}

// StartForTest starts a deployment of n nodes for one test, with its
// drives in a TempDir, and stops and removes it at the test's cleanup. A
// MinIO that is missing or does not start fails the test: `make test`
// installs it.
func StartForTest(tb testing.TB, n int) *Cluster {
	tb.Helper()
	dir, err := TempDir("miniotest-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	c, err := Start(dir, n)
	if err != nil {
		tb.Fatalf("starting a %d-node MinIO: %v", n, err)
	}
	tb.Cleanup(c.Stop)
	return c
}
