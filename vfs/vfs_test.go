package vfs_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gdsload/gdsload/internal/rdmafstest"
	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/rdmafs"
	"github.com/gdsload/gdsload/vfs"
	"github.com/gdsload/gdsload/vfs/rdmafsfs"
)

func writeFile(t testing.TB, root, name string, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(uint64(n), uint64(len(name))))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	p := filepath.Join(root, filepath.FromSlash(name))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, b, 0o644))
	return b
}

// tree writes the same files under root for the local and remote cases.
func tree(t *testing.T) (string, map[string][]byte) {
	root := t.TempDir()
	want := map[string][]byte{}
	for name, n := range map[string]int{"a.bin": 10, "a/b.bin": 4097, "a/c/d.bin": 0, "z.bin": 1 << 20, "sp ace%.bin": 3} {
		want[name] = writeFile(t, root, name, n)
	}
	require.NoError(t, os.Symlink("z.bin", filepath.Join(root, "link.bin")))
	want["link.bin"] = want["z.bin"]
	require.NoError(t, os.Symlink("a", filepath.Join(root, "dirlink")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644))
	return root, want
}

func newMux(t *testing.T, opts ...vfs.Option) *vfs.Mux {
	t.Helper()
	m, err := vfs.New(append([]vfs.Option{rdmafsfs.With(rdmafstest.Options()...)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, m.Close()) })
	return m
}

// The same tree walks, lists, opens and reads alike on a local disk, as a
// file:// URL and on an rdmafs server: regular files and links to files in
// lexical order, named so they open again; a missing path matches
// fs.ErrNotExist through the same functions.
func TestWalkOpenAcrossSchemes(t *testing.T) {
	root, want := tree(t)
	remote := rdmafstest.Serve(t, root)
	m := newMux(t)
	ctx := context.Background()
	wantRels := []string{"a.bin", "a/b.bin", "a/c/d.bin", "link.bin", "sp ace%.bin", "z.bin"}
	for _, base := range []string{root, "file://" + root, remote + "/"} {
		t.Run(strings.SplitN(base, ":", 2)[0], func(t *testing.T) {
			entries, err := m.Walk(ctx, base)
			require.NoError(t, err)
			var rels []string
			for _, e := range entries {
				rels = append(rels, e.Rel)
				require.Equal(t, int64(len(want[e.Rel])), e.Info.Size(), e.Rel)
				f, err := m.OpenEntry(ctx, e)
				require.NoError(t, err, e.URL)
				require.Equal(t, e.URL, f.Name())
				got := make([]byte, f.Size())
				_, err = f.ReadAt(got, 0)
				if len(got) > 0 {
					require.NoError(t, err)
				}
				require.Equal(t, want[e.Rel], got, e.URL)
				require.NotEmpty(t, f.Identity())
				require.False(t, f.ModTime().IsZero())
				require.NoError(t, f.Close())

				again, err := m.Open(ctx, e.URL)
				require.NoError(t, err, "a walked URL opens again: %s", e.URL)
				require.Equal(t, f.Size(), again.Size())
				require.NoError(t, again.Close())
			}
			require.Equal(t, wantRels, rels)

			one, err := m.Walk(ctx, vfs.Join(base, "a/b.bin"))
			require.NoError(t, err)
			require.Len(t, one, 1)
			require.Equal(t, "b.bin", one[0].Rel)

			list, err := m.List(ctx, vfs.Join(base, "a"))
			require.NoError(t, err)
			require.Equal(t, []string{"b.bin", "c"}, []string{list[0].Rel, list[1].Rel})
			require.True(t, list[1].Info.IsDir())

			fi, err := m.Stat(ctx, vfs.Join(base, "a"))
			require.NoError(t, err)
			require.True(t, fi.IsDir())

			for _, op := range []func(string) error{
				func(u string) error { _, err := m.Open(ctx, u); return err },
				func(u string) error { _, err := m.Stat(ctx, u); return err },
				func(u string) error { _, err := m.Walk(ctx, u); return err },
				func(u string) error { _, err := m.OpenAll(ctx, []string{u}); return err },
			} {
				err := op(vfs.Join(base, "missing.bin"))
				require.ErrorIs(t, err, fs.ErrNotExist)
				require.ErrorContains(t, err, "missing.bin")
			}

			b, err := m.ReadFile(ctx, vfs.Join(base, "a/b.bin"), 1<<20)
			require.NoError(t, err)
			require.Equal(t, want["a/b.bin"], b)
			_, err = m.ReadFile(ctx, vfs.Join(base, "z.bin"), 100)
			require.ErrorContains(t, err, "over the 100-byte limit")

			files, err := m.OpenAll(ctx, []string{vfs.Join(base, "a"), vfs.Join(base, "z.bin")}, vfs.WithSmallFilesBuffered())
			require.NoError(t, err)
			require.Len(t, files, 3)
			require.EqualValues(t, 4097+1<<20, files.Size())
			require.Equal(t, []string{vfs.Join(base, "a/b.bin"), vfs.Join(base, "a/c/d.bin"), vfs.Join(base, "z.bin")}, files.Names())
			res, err := loader.Load(ctx, []loader.Job{loader.WholeFile(files[2], loader.NewHostBuffer(make([]byte, 1<<20)))}, loader.Options{Checksum: loader.ChecksumSHA256})
			require.NoError(t, err)
			require.Equal(t, files[2].Name(), res.Files[0].Name)
			require.Equal(t, vfs.Join(base, "z.bin"), res.Files[0].Name)
			require.NoError(t, files.Close())

			r, err := m.Open(ctx, vfs.Join(base, "z.bin"))
			require.NoError(t, err)
			all, err := io.ReadAll(vfs.NewReader(ctx, r))
			require.NoError(t, err)
			require.Equal(t, want["z.bin"], all)
		})
	}
}

// A link whose target cannot be read is an error naming it, not a silent
// gap; a directory with no files at all is nothing to load.
func TestWalkErrors(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "ok.bin", 5)
	require.NoError(t, os.Symlink("nowhere", filepath.Join(root, "dangling")))
	empty := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(empty, "sub"), 0o755))
	remote := rdmafstest.Serve(t, root)
	m := newMux(t)
	for _, base := range []string{root, remote} {
		_, err := m.Walk(context.Background(), base)
		require.ErrorContains(t, err, "dangling")
		require.ErrorContains(t, err, "symbolic link")
	}
	_, err := m.OpenAll(context.Background(), []string{empty})
	require.ErrorContains(t, err, "no files to load")
	_, err = m.Walk(context.Background(), "unknown://h/x")
	require.ErrorIs(t, err, vfs.ErrUnknownScheme)
}

// A path the server refuses (a link out of its export) matches
// fs.ErrPermission, as a local refusal does.
func TestRemoteRefusalMatchesErrPermission(t *testing.T) {
	root := t.TempDir()
	outside := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(outside, []byte("x"), 0o644))
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "escape")))
	remote := rdmafstest.Serve(t, root)
	m := newMux(t)
	_, err := m.Open(context.Background(), remote+"/escape")
	require.ErrorIs(t, err, fs.ErrPermission)
	require.NotErrorIs(t, err, fs.ErrNotExist)
}

// memFS is a scheme served from memory: it counts how often the Mux
// asks for it, offers Walker and InfoOpener, and refuses "locked".
type memFS struct {
	files  map[string][]byte
	made   *atomic.Int64
	closed *atomic.Int64
	walks  *atomic.Int64
}

type memScheme struct{ fs *memFS }

func (s memScheme) FS(_ context.Context, authority string) (vfs.FS, error) {
	if authority == "down" {
		return nil, errors.New("bucket down unreachable")
	}
	s.fs.made.Add(1)
	return s.fs, nil
}

func (m *memFS) Stat(_ context.Context, name string) (fs.FileInfo, error) {
	if name == "locked" {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrPermission}
	}
	if b, ok := m.files[name]; ok {
		return vfs.NewFileInfo(path.Base(name), int64(len(b)), 0o444, time.Unix(1, 0)), nil
	}
	for k := range m.files {
		if name == "" || strings.HasPrefix(k, name+"/") {
			return vfs.NewFileInfo(path.Base(name), 0, fs.ModeDir|0o555, time.Time{}), nil
		}
	}
	return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
}

func (m *memFS) List(ctx context.Context, name string) ([]fs.FileInfo, error) {
	return nil, errors.New("List is not used: memFS walks in one pass")
}

func (m *memFS) WalkFiles(_ context.Context, name string, fn func(string, fs.FileInfo) error) error {
	m.walks.Add(1)
	for k, b := range m.files {
		if rel, ok := strings.CutPrefix(k, name+"/"); ok || name == "" {
			if name == "" {
				rel = k
			}
			if err := fn(rel, vfs.NewFileInfo(path.Base(k), int64(len(b)), 0o444, time.Unix(1, 0))); err != nil {
				return err
			}
		}
	}
	return nil
}

type memFile struct {
	*bytes.Reader
	name string
}

func (f memFile) Name() string       { return f.name }
func (f memFile) ModTime() time.Time { return time.Unix(1, 0) }
func (f memFile) Identity() string   { return "etag-" + f.name }
func (f memFile) Close() error       { return nil }

func (m *memFS) Open(_ context.Context, name string) (vfs.File, error) {
	b, ok := m.files[name]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return memFile{bytes.NewReader(b), "mem://bucket/" + name}, nil
}

func (m *memFS) OpenInfo(ctx context.Context, name string, _ fs.FileInfo) (vfs.File, error) {
	return m.Open(ctx, name)
}

func (m *memFS) Close() error { m.closed.Add(1); return nil }

// A scheme plugged in with WithScheme: one FS per authority, made on first
// use and closed by Close; its Walker lists a tree in one pass; its errors
// match the fs errors through the Mux.
func TestWithScheme(t *testing.T) {
	mem := &memFS{files: map[string][]byte{"d/b.bin": []byte("bb"), "d/a.bin": []byte("a"), "d/e/c.bin": []byte("ccc"), "top": nil},
		made: new(atomic.Int64), closed: new(atomic.Int64), walks: new(atomic.Int64)}
	m, err := vfs.New(vfs.WithScheme("mem", memScheme{mem}))
	require.NoError(t, err)
	ctx := context.Background()
	entries, err := m.Walk(ctx, "mem://bucket/d")
	require.NoError(t, err)
	var urls []string
	for _, e := range entries {
		urls = append(urls, e.URL)
	}
	require.Equal(t, []string{"mem://bucket/d/a.bin", "mem://bucket/d/b.bin", "mem://bucket/d/e/c.bin"}, urls)
	require.EqualValues(t, 1, mem.walks.Load())
	files, err := m.OpenAll(ctx, []string{"mem://bucket/d", "mem://bucket/top"})
	require.NoError(t, err)
	require.Len(t, files, 4)
	require.EqualValues(t, 6, files.Size())
	require.EqualValues(t, 1, mem.made.Load(), "one FS per authority")
	_, err = m.Open(ctx, "mem://bucket/none")
	require.ErrorIs(t, err, fs.ErrNotExist)
	_, err = m.Stat(ctx, "mem://bucket/locked")
	require.ErrorIs(t, err, fs.ErrPermission)
	_, err = m.Open(ctx, "mem://down/x")
	require.ErrorContains(t, err, "bucket down unreachable")
	_, err = m.Open(ctx, "mem://other/d/a.bin")
	require.NoError(t, err)
	require.EqualValues(t, 2, mem.made.Load())
	require.NoError(t, m.Close())
	require.EqualValues(t, 2, mem.closed.Load(), "Close closes every FS made")
	_, err = m.Open(ctx, "mem://bucket/d/a.bin")
	require.ErrorIs(t, err, vfs.ErrClosed)

	for _, bad := range []string{"", "File", "file", "9p"} {
		_, err := vfs.New(vfs.WithScheme(bad, memScheme{mem}))
		require.Error(t, err, bad)
	}
	_, err = vfs.New(vfs.WithScheme("s3", nil))
	require.Error(t, err)
}

// One client per rdmafs server, shared by every URL on it, dialled on
// first use; options that a server would refuse are refused by New.
func TestRDMAFSClientPool(t *testing.T) {
	root, _ := tree(t)
	remote := rdmafstest.Serve(t, root)
	var dials atomic.Int64
	counting := rdmafs.WithTransport(countingTransport{rdmafs.TCP(), &dials})
	m := newMux(t, rdmafsfs.With(append(rdmafstest.Options(), counting, rdmafs.WithConnections(2))...))
	ctx := context.Background()
	for range 3 {
		f, err := m.Open(ctx, remote+"/a.bin")
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
	_, err := m.Walk(ctx, remote+"/a")
	require.NoError(t, err)
	require.EqualValues(t, 2, dials.Load(), "one client of 2 connections for the server")

	_, err = vfs.New(rdmafsfs.With(rdmafs.WithToken([]byte("short"))))
	require.ErrorContains(t, err, "at least 16")

	// Without options the token comes from GDSLOAD_TOKEN.
	t.Setenv(rdmafs.TokenEnv, string(rdmafstest.Token))
	plain, err := vfs.New()
	require.NoError(t, err)
	defer plain.Close()
	_, err = plain.Stat(ctx, remote+"/a.bin")
	require.NoError(t, err)
	t.Setenv(rdmafs.TokenEnv, "wrong-token-0123456789abcdef")
	other, err := vfs.New()
	require.NoError(t, err)
	defer other.Close()
	_, err = other.Stat(ctx, remote+"/a.bin")
	require.ErrorIs(t, err, rdmafs.ErrAuth)
}

type countingTransport struct {
	rdmafs.Transport
	n *atomic.Int64
}

func (c countingTransport) Dial(ctx context.Context, addr string) (net.Conn, error) {
	c.n.Add(1)
	return c.Transport.Dial(ctx, addr)
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want vfs.Location
		bad  string
	}{
		{in: "data/x.bin", want: vfs.Location{Path: "data/x.bin"}},
		{in: "/abs", want: vfs.Location{Path: "/abs"}},
		{in: "file:///abs/x", want: vfs.Location{Path: "/abs/x"}},
		{in: "file://localhost/abs/x", want: vfs.Location{Path: "/abs/x"}},
		{in: "rdmafs://h/p/q", want: vfs.Location{Scheme: "rdmafs", Authority: "h:7420", Path: "p/q"}},
		{in: "rdmafs://h:1/", want: vfs.Location{Scheme: "rdmafs", Authority: "h:1"}},
		{in: "RDMAFS://h:1/a%20b", want: vfs.Location{Scheme: "rdmafs", Authority: "h:1", Path: "a b"}},
		{in: "s3://bucket/key/x", want: vfs.Location{Scheme: "s3", Authority: "bucket", Path: "key/x"}},
		{in: "s3://bucket/dir/", want: vfs.Location{Scheme: "s3", Authority: "bucket", Path: "dir"}},
		{in: "", bad: "empty"},
		{in: "://x", bad: "no scheme"},
		{in: "file://host/x", bad: "local files"},
		{in: "s3:///key", bad: "no s3 authority"},
		{in: "s3://b/k?x=1", bad: "query"},
		{in: "rdmafs://h:99999/x", bad: "bad port"},
	} {
		got, err := vfs.Parse(tc.in)
		if tc.bad != "" {
			require.ErrorContains(t, err, tc.bad, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, got, tc.in)
	}
	require.Equal(t, "rdmafs://h:1/a/b%25c", vfs.Join("rdmafs://h:1/a", "b%c"))
	require.Equal(t, "rdmafs://h:1/", vfs.Dir("rdmafs://h:1/a"))
	require.Equal(t, "s3://b/k", vfs.Dir("s3://b/k/x.tar"))
	require.Equal(t, filepath.Join("d", "e", "f"), vfs.Join("d", "e/f"))
	require.Equal(t, "x.tar", vfs.Base("s3://b/k/x.tar"))
}

// FuzzParse: a URL that parses writes back (String) as one that parses to
// the same location, so listed names open again whatever bytes they hold.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"rdmafs://h:1/a b/%25", "s3://bucket/k?/x", "file:///tmp/x", "data/x", "x://y/z#q"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		l, err := vfs.Parse(raw)
		if err != nil {
			return
		}
		if l.IsLocal() {
			return // a path stands for itself
		}
		again, err := vfs.Parse(l.String())
		require.NoError(t, err, "%q parses to %+v, whose String %q does not parse", raw, l, l.String())
		require.Equal(t, l, again, "%q parses to %+v, String %q to %+v", raw, l, l.String(), again)
		for _, rel := range []string{"x", "a b%", "c/d"} {
			j := l.Join(rel)
			back, err := vfs.Parse(j.String())
			require.NoError(t, err, "%+v joined with %q: %q parses to %+v, %v", l, rel, j.String(), back, err)
			require.Equal(t, j, back, "%+v joined with %q: %q parses to %+v, %v", l, rel, j.String(), back, err)
		}
	})
}

func TestOpenOptions(t *testing.T) {
	m := newMux(t)
	root := t.TempDir()
	writeFile(t, root, "small.bin", 100)
	f, err := m.Open(context.Background(), filepath.Join(root, "small.bin"), vfs.WithSmallFilesBuffered())
	require.NoError(t, err)
	require.Contains(t, f.(loader.DirectInfo).DirectReason(), "smaller than 1 MiB")
	require.NoError(t, f.Close())
	f, err = m.Open(context.Background(), filepath.Join(root, "small.bin"), vfs.WithDirect(loader.DirectOff))
	require.NoError(t, err)
	require.False(t, f.(loader.DirectInfo).Direct())
	require.NoError(t, f.Close())
	_, err = m.Open(context.Background(), filepath.Join(root, "small.bin"), vfs.WithDirect(9))
	require.Error(t, err)
	_, err = m.Open(context.Background(), root)
	require.Error(t, err, "a directory does not open as a file")
	require.True(t, vfs.IsURL("s3://x/y"))
	require.False(t, vfs.IsURL("/x"))
}

// WithoutDirs leaves out the files inside directories of the names given,
// at any depth below a walked directory, while a directory named itself
// still opens.
func TestOpenAllWithoutDirs(t *testing.T) {
	m := newMux(t)
	root := t.TempDir()
	for _, name := range []string{"a.bin", ".side/journal", "sub/b.bin", "sub/.side/lock", "sub/.side/x/y", "side/c.bin", ".sidecar/d.bin"} {
		writeFile(t, root, name, 3)
	}
	ctx := context.Background()
	rels := func(files vfs.Files, base string) []string {
		var out []string
		for _, f := range files {
			rel, err := filepath.Rel(base, f.Name())
			require.NoError(t, err)
			out = append(out, filepath.ToSlash(rel))
		}
		require.NoError(t, files.Close())
		return out
	}
	files, err := m.OpenAll(ctx, []string{root}, vfs.WithoutDirs(".side"))
	require.NoError(t, err)
	require.Equal(t, []string{".sidecar/d.bin", "a.bin", "side/c.bin", "sub/b.bin"}, rels(files, root))

	files, err = m.OpenAll(ctx, []string{root})
	require.NoError(t, err)
	require.Len(t, rels(files, root), 7, "nothing is left out by default")

	files, err = m.OpenAll(ctx, []string{filepath.Join(root, "sub", ".side")}, vfs.WithoutDirs(".side"))
	require.NoError(t, err)
	require.Equal(t, []string{"lock", "x/y"}, rels(files, filepath.Join(root, "sub", ".side")), "a directory given opens whatever its name")
}

// A registered Backend is served by every Mux New makes, each with a
// Scheme of its own, and its Parse decides the authority; WithScheme
// still replaces it in one Mux. Registering a name twice, or "file",
// panics; a scheme nobody registered is refused, naming the backend
// packages to import.
func TestRegister(t *testing.T) {
	var made atomic.Int64
	mem := &memFS{files: map[string][]byte{"d/a.bin": []byte("a")}, made: new(atomic.Int64), closed: new(atomic.Int64), walks: new(atomic.Int64)}
	vfs.Register("regmem", vfs.Backend{
		Scheme: func() vfs.Scheme { made.Add(1); return memScheme{mem} },
		Parse: func(raw string) (string, string, error) {
			rest := strings.TrimPrefix(raw, "regmem://")
			host, p, _ := strings.Cut(rest, "/")
			if host == "" {
				return "", "", errors.New("regmem: no bucket")
			}
			return strings.ToUpper(host), p, nil
		},
	})
	require.Contains(t, vfs.Registered(), "regmem")
	require.Contains(t, vfs.Registered(), "rdmafs", "imported by this test")

	loc, err := vfs.Parse("regmem://b/d/a.bin")
	require.NoError(t, err)
	require.Equal(t, vfs.Location{Scheme: "regmem", Authority: "B", Path: "d/a.bin"}, loc)
	_, err = vfs.Parse("regmem:///x")
	require.ErrorContains(t, err, "regmem: no bucket")

	for range 2 {
		m, err := vfs.New()
		require.NoError(t, err)
		b, err := m.ReadFile(context.Background(), "regmem://b/d/a.bin", 10)
		require.NoError(t, err)
		require.Equal(t, "a", string(b))
		require.NoError(t, m.Close())
	}
	require.EqualValues(t, 2, made.Load(), "a Scheme per Mux")

	other := &memFS{files: map[string][]byte{"d/a.bin": []byte("other")}, made: new(atomic.Int64), closed: new(atomic.Int64), walks: new(atomic.Int64)}
	m := newMux(t, vfs.WithScheme("regmem", memScheme{other}))
	b, err := m.ReadFile(context.Background(), "regmem://b/d/a.bin", 10)
	require.NoError(t, err)
	require.Equal(t, "other", string(b))

	backend := vfs.Backend{Scheme: func() vfs.Scheme { return memScheme{mem} }}
	require.Panics(t, func() { vfs.Register("regmem", backend) }, "twice")
	require.Panics(t, func() { vfs.Register("file", backend) })
	require.Panics(t, func() { vfs.Register("Up", backend) })
	require.Panics(t, func() { vfs.Register("nobackend", vfs.Backend{}) })

	_, err = m.Open(context.Background(), "gs://bucket/x")
	require.ErrorIs(t, err, vfs.ErrUnknownScheme)
	require.ErrorContains(t, err, "vfs/s3fs")
	require.ErrorContains(t, err, "rdmafs, regmem")
}
