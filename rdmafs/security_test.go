package rdmafs

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gdsload/gdsload/rdmafs/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// escapeFixture builds root/ and a sibling outside/ holding a secret, with
// symlinks inside the root that lead outside.
func escapeFixture(t *testing.T) (root string) {
	base := t.TempDir()
	root = filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{root, outside, filepath.Join(root, "sub")} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("SECRET"), 0o644))
	writeFile(t, root, "ok.bin", 100, 1)
	links := map[string]string{
		"abs-dir":        outside,
		"rel-dir":        "../outside",
		"abs-file":       filepath.Join(outside, "secret"),
		"sub/deep":       "../../outside/secret",
		"etc-passwd":     "/etc/passwd",
		"inside-to-link": "sub/deep",
		"ok-link":        "sub/../ok.bin", // stays inside: served
	}
	for name, target := range links {
		symlinkFollowable(t, target, filepath.Join(root, name))
	}
	return root
}

// symlinkFollowable makes a symbolic link at path to target that the
// server's raw open can follow. A link whose access time is older than
// its change time must have it written when followed, and openat2 with
// RESOLVE_CACHED (serverfile_linux.go) refuses to wait for that, leaving
// the name to os.Root: with a current access time, where the link leads
// is what decides whether the raw open takes it.
func symlinkFollowable(t *testing.T, target, path string) {
	t.Helper()
	require.NoError(t, os.Symlink(target, path))
	now := time.Now()
	times := []unix.Timespec{unix.NsecToTimespec(now.UnixNano()), unix.NsecToTimespec(now.Add(-time.Hour).UnixNano())}
	require.NoError(t, unix.UtimesNanoAt(unix.AT_FDCWD, path, times, unix.AT_SYMLINK_NOFOLLOW))
}

func TestHostilePathsRefused(t *testing.T) {
	root := escapeFixture(t)
	ts := startServer(t, serverConfig{Root: root}, nil)
	refused := []wire.Code{wire.CodePermission, wire.CodeInvalid}
	tests := []struct {
		name  string
		codes []wire.Code // acceptable refusals
	}{
		{"..", refused},
		{"../..", refused},
		{"../outside/secret", refused},
		{"a/../../x", refused},
		{"sub/../../outside/secret", refused},
		{"./../outside/secret", refused},
		{"/etc/passwd", refused},
		{"/", refused},
		{filepath.Join(filepath.Dir(root), "outside", "secret"), refused},
		{"ok.bin\x00", refused},
		{"\x00", refused},
		{"sub/\x00/../ok.bin", refused},
		{strings.Repeat("a", 300), refused},
		{strings.Repeat("a/", 2100) + "x", refused},
		{strings.Repeat("b", 60000), refused},
		{"abs-dir/secret", refused},
		{"rel-dir/secret", refused},
		{"abs-file", refused},
		{"sub/deep", refused},
		{"etc-passwd", refused},
		{"inside-to-link", refused},
		{"", []wire.Code{wire.CodeInvalid, wire.CodeIsDir}},
	}
	ops := []struct {
		op     string
		encode func(name string) (wire.Type, []byte)
	}{
		{"STAT", func(n string) (wire.Type, []byte) { return wire.TypeStat, wire.Stat{Name: n}.Append(nil) }},
		{"READ", func(n string) (wire.Type, []byte) {
			return wire.TypeRead, wire.Read{Length: 4096, Name: n}.Append(nil)
		}},
		{"LIST", func(n string) (wire.Type, []byte) { return wire.TypeList, wire.List{Name: n}.Append(nil) }},
	}
	r := rawDial(t, ts.addr)
	r.mustWelcome(testTok)
	id := uint32(0)
	for _, op := range ops {
		for _, tc := range tests {
			if op.op != "READ" && tc.name == "" {
				continue // stat/list of "" mean the root
			}
			id++
			typ, p := op.encode(tc.name)
			r.send(typ, id, p)
			h, m := r.expectError()
			assert.Equal(t, id, h.ID, "%s %.80q: got id %d code %s (%.80q), want id %d one of %v", op.op, tc.name, h.ID, m.Code, m.Message, id, tc.codes)
			assert.True(t, slices.Contains(tc.codes, m.Code), "%s %.80q: got id %d code %s (%.80q), want id %d one of %v", op.op, tc.name, h.ID, m.Code, m.Message, id, tc.codes)
			assert.False(t, strings.Contains(m.Message, filepath.Dir(root)) && !strings.HasPrefix(tc.name, "/"), "%s %.80q: error reveals the server path: %q", op.op, tc.name, m.Message)
		}
	}
	// The connection survives refusals and still serves good requests,
	// through a link that stays inside too.
	for _, name := range []string{"ok.bin", "ok-link"} {
		id++
		got := r.read(id, name, 100)
		require.Len(t, got, 100, "good read of %s after refusals: %d bytes, want 100", name, len(got))
	}
}

func TestNonRegularFilesRefused(t *testing.T) {
	root := t.TempDir()
	fifo := filepath.Join(root, "fifo")
	if err := mkfifo(fifo); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	ts := startServer(t, serverConfig{Root: root}, nil)
	r := rawDial(t, ts.addr)
	r.mustWelcome(testTok)
	r.send(wire.TypeRead, 1, wire.Read{Length: 10, Name: "fifo"}.Append(nil))
	_, m := r.expectError()
	require.Equal(t, wire.CodeNotRegular, m.Code, "READ of a FIFO: code %s, want NOT_REGULAR", m.Code)
	// LIST of it must not wait for a writer either.
	r.send(wire.TypeList, 2, wire.List{Name: "fifo"}.Append(nil))
	_, m = r.expectError()
	require.Equal(t, wire.CodeNotDir, m.Code, "LIST of a FIFO: code %s, want NOT_DIR", m.Code)
}

func TestAuthRefused(t *testing.T) {
	ts := startServer(t, serverConfig{HandshakeTimeout: 500 * time.Millisecond}, nil)
	t.Run("wrong token", func(t *testing.T) {
		r := rawDial(t, ts.addr)
		h, p := r.handshake([]byte("not-the-token-0123456789"))
		m, _ := wire.DecodeError(p)
		require.Equal(t, wire.TypeError, h.Type, "got %s %v, want ERROR AUTH", h.Type, m)
		require.Equal(t, wire.CodeAuth, m.Code, "got %s %v, want ERROR AUTH", h.Type, m)
		r.expectClosed()
	})
	t.Run("missing token", func(t *testing.T) {
		r := rawDial(t, ts.addr)
		h, p := r.handshake(nil)
		m, _ := wire.DecodeError(p)
		require.Equal(t, wire.TypeError, h.Type, "got %s %v, want ERROR AUTH", h.Type, m)
		require.Equal(t, wire.CodeAuth, m.Code, "got %s %v, want ERROR AUTH", h.Type, m)
		r.expectClosed()
	})
	t.Run("server proof replayed as client proof", func(t *testing.T) {
		r := rawDial(t, ts.addr)
		hello := wire.Hello{Nonce: newNonce()}
		r.send(wire.TypeHello, 0, hello.Append(nil))
		_, p, err := r.recv()
		require.NoError(t, err)
		ch, _ := wire.DecodeChallenge(p)
		r.send(wire.TypeAuth, 0, wire.Auth{Proof: ch.ServerProof}.Append(nil))
		_, m := r.expectError()
		require.Equal(t, wire.CodeAuth, m.Code, "code %s, want AUTH", m.Code)
		r.expectClosed()
	})
	t.Run("request before handshake", func(t *testing.T) {
		r := rawDial(t, ts.addr)
		r.send(wire.TypeStat, 1, wire.Stat{Name: "x"}.Append(nil))
		_, m := r.expectError()
		require.Equal(t, wire.CodeProtocol, m.Code, "code %s, want PROTOCOL", m.Code)
		r.expectClosed()
	})
	t.Run("request instead of AUTH", func(t *testing.T) {
		r := rawDial(t, ts.addr)
		r.send(wire.TypeHello, 0, wire.Hello{}.Append(nil))
		_, _, err := r.recv()
		require.NoError(t, err)
		r.send(wire.TypeRead, 1, wire.Read{Length: 10, Name: "x"}.Append(nil))
		_, m := r.expectError()
		require.Equal(t, wire.CodeAuth, m.Code, "code %s, want AUTH", m.Code)
		r.expectClosed()
	})
	t.Run("silent client cut at handshake timeout", func(t *testing.T) {
		r := rawDial(t, ts.addr)
		start := time.Now()
		r.expectClosed()
		d := time.Since(start)
		require.LessOrEqual(t, d, 3*time.Second, "closed after %v", d)
	})
}

func TestServerRequiresTokenOrInsecureFlag(t *testing.T) {
	tests := []struct {
		name string
		cfg  serverConfig
	}{
		{"no token", serverConfig{Root: t.TempDir()}},
		{"short token", serverConfig{Root: t.TempDir(), Token: []byte("short")}},
		{"both", serverConfig{Root: t.TempDir(), Token: testTok, InsecureNoToken: true}},
		{"no root", serverConfig{Token: testTok}},
		{"root is a file", serverConfig{Root: filepath.Join(t.TempDir(), "missing"), Token: testTok}},
	}
	for _, tc := range tests {
		_, err := newServer(tc.cfg)
		assert.Error(t, err, "%s: NewServer succeeded, want error", tc.name)
	}
}
