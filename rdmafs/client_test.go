package rdmafs

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadSizesByteExact(t *testing.T) {
	sizes := []int{0, 1, 4095, 4096, 4097, 256<<10 - 1, 256 << 10, 1<<20 + 3, 5<<20 + 17}
	type config struct {
		name string
		tr   func() Transport
		crc  bool
	}
	configs := []config{
		{"tcp/crc", TCP, true},       // sendfile, CRC32C from the digest cache or a mapping
		{"tcp/sendfile", TCP, false}, // no CRC: the server uses sendfile
		{"loopback/crc", func() Transport { return newLoopback() }, true}, // region writes
		{"loopback", func() Transport { return newLoopback() }, false},
	}
	for _, cfg := range configs {
		t.Run(cfg.name, func(t *testing.T) {
			tr := cfg.tr()
			ts := startServer(t, serverConfig{}, tr)
			files := map[int][]byte{}
			for _, n := range sizes {
				files[n] = writeFile(t, ts.root, fmt.Sprintf("f%d", n), n, uint64(n))
			}
			// Small chunks so multi-MiB reads are split and pipelined.
			cl := dialTest(t, ts, tr, WithChunkSize(1<<20), WithConnections(3), WithCRC(cfg.crc))
			for _, n := range sizes {
				t.Run(fmt.Sprint(n), func(t *testing.T) {
					f, err := cl.Open(context.Background(), fmt.Sprintf("f%d", n))
					require.NoError(t, err)
					require.EqualValues(t, int64(n), f.Size(), "Size = %d, want %d", f.Size(), n)
					// Whole file, then through io.SectionReader (exercises
					// short reads at EOF), then a read past the end.
					got := make([]byte, n)
					k, err := f.ReadAt(got, 0)
					require.Equal(t, n, k, "ReadAt whole: n=%d err=%v", k, err)
					if err != io.EOF {
						require.NoError(t, err, "ReadAt whole: n=%d", k)
					}
					require.True(t, bytes.Equal(got, files[n]), "data mismatch for size %d", n)
					all, err := io.ReadAll(io.NewSectionReader(f, 0, f.Size()+100))
					require.NoError(t, err, "SectionReader: %d bytes, err %v", len(all), err)
					require.True(t, bytes.Equal(all, files[n]), "SectionReader: %d bytes, err %v", len(all), err)
					if n < 3 {
						return
					}
					over := make([]byte, 10)
					k, err = f.ReadAt(over, int64(n)-3)
					wantK := 3
					require.Equal(t, wantK, k, "read across EOF: n=%d err=%v", k, err)
					require.Equal(t, io.EOF, err, "read across EOF: n=%d err=%v", k, err)
					require.True(t, bytes.Equal(over[:k], files[n][n-wantK:]), "read across EOF: n=%d err=%v", k, err)
				})
			}
		})
	}
}

func TestStatListAndErrors(t *testing.T) {
	for _, trc := range transports() {
		t.Run(trc.name, func(t *testing.T) {
			tr := trc.tr()
			ts := startServer(t, serverConfig{}, tr)
			writeFile(t, ts.root, "a.bin", 10, 1)
			writeFile(t, ts.root, "dir/b.bin", 20, 2)
			cl := dialTest(t, ts, tr)
			ctx := context.Background()

			fi, err := cl.Stat(ctx, "dir/b.bin")
			require.NoError(t, err, "Stat dir/b.bin = %+v, %v", fi, err)
			require.EqualValues(t, 20, fi.Size(), "Stat dir/b.bin = %+v, %v", fi, err)
			require.False(t, fi.IsDir(), "Stat dir/b.bin = %+v, %v", fi, err)
			ents, err := cl.List(ctx, "")
			require.NoError(t, err, "List root = %+v, %v", ents, err)
			require.Len(t, ents, 2, "List root = %+v, %v", ents, err)
			require.Equal(t, "a.bin", ents[0].Name(), "List root = %+v, %v", ents, err)
			require.True(t, ents[1].IsDir(), "List root = %+v, %v", ents, err)
			tests := []struct {
				name string
				op   func() error
				want error
			}{
				{"stat missing", func() error { _, err := cl.Stat(ctx, "nope"); return err }, ErrNotFound},
				{"open missing", func() error { _, err := cl.Open(ctx, "nope"); return err }, ErrNotFound},
				{"open dir", func() error { _, err := cl.Open(ctx, "dir"); return err }, ErrInvalid},
				{"list file", func() error { _, err := cl.List(ctx, "a.bin"); return err }, ErrInvalid},
				{"stat dotdot", func() error { _, err := cl.Stat(ctx, "../x"); return err }, ErrPermission},
				{"negative offset", func() error {
					f, err := cl.Open(ctx, "a.bin")
					if err != nil {
						return err
					}
					_, err = f.ReadAt(make([]byte, 1), -1)
					return err
				}, ErrInvalid},
			}
			for _, tc := range tests {
				err := tc.op()
				assert.ErrorIs(t, err, tc.want, "%s: err = %v, want %v", tc.name, err, tc.want)
			}
		})
	}
}

func TestListPagination(t *testing.T) {
	ts := startServer(t, serverConfig{}, nil)
	// Long names force several LIST_OK pages of 64 KiB.
	const n = 700
	for i := range n {
		name := fmt.Sprintf("%04d-%s", i, bytes.Repeat([]byte("x"), 200))
		require.NoError(t, os.WriteFile(filepath.Join(ts.root, name), nil, 0o644))
	}
	cl := dialTest(t, ts, nil)
	ents, err := cl.List(context.Background(), ".")
	require.NoError(t, err, "List: %d entries, err %v; want %d", len(ents), err, n)
	require.Len(t, ents, n, "List: %d entries, err %v; want %d", len(ents), err, n)
	for i, e := range ents {
		want := fmt.Sprintf("%04d-", i)
		require.Equal(t, want, e.Name()[:5], "entry %d is %q", i, e.Name()[:5])
	}
}

func TestDialErrors(t *testing.T) {
	ts := startServer(t, serverConfig{}, nil)
	open := startServer(t, serverConfig{InsecureNoToken: true}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tests := []struct {
		name string
		addr string
		opts []Option
		want error
	}{
		{"wrong token", ts.addr, []Option{WithToken([]byte("wrong-token-0123456789"))}, ErrAuth},
		{"no token", ts.addr, nil, ErrAuth},
		{"token against open server", open.addr, []Option{WithToken(testTok)}, ErrAuth},
		{"nothing listening", "127.0.0.1:1", []Option{WithToken(testTok)}, ErrServerGone},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Dial(ctx, tc.addr, append(tc.opts, WithLogger(quietLogger()))...)
			require.ErrorIs(t, err, tc.want, "Dial err = %v, want %v", err, tc.want)
			// The address is named, once: the transport's own error
			// names it already.
			n := strings.Count(err.Error(), tc.addr)
			assert.False(t, tc.want == ErrServerGone && n != 1, "Dial err = %q names %s %d times, want once", err, tc.addr, n)
		})
	}
	cl, err := Dial(ctx, open.addr, WithLogger(quietLogger()))
	require.NoError(t, err, "Dial insecure server without token: %v", err)
	cl.Close()
}

func TestParseURL(t *testing.T) {
	tests := []struct {
		in, addr, path string
		bad            bool
	}{
		{in: "rdmafs://host:9000/a/b.bin", addr: "host:9000", path: "a/b.bin"},
		{in: "rdmafs://host/x", addr: "host:7420", path: "x"},
		{in: "rdmafs://[::1]:1/", addr: "[::1]:1", path: ""},
		{in: "rdmafs://h:1/a%20b", addr: "h:1", path: "a b"},
		{in: "http://h/x", bad: true},
		{in: "rdmafs:///x", bad: true},
		{in: "rdmafs://h:99999/x", bad: true},
		{in: "rdmafs://u:p@h/x", bad: true},
	}
	for _, tc := range tests {
		u, err := ParseURL(tc.in)
		if tc.bad {
			assert.Error(t, err, "ParseURL(%q) = %+v, want error", tc.in, u)
			continue
		}
		assert.NoError(t, err, "ParseURL(%q) = %+v, %v; want %s %s", tc.in, u, err, tc.addr, tc.path)
		assert.Equal(t, tc.addr, u.Addr, "ParseURL(%q) = %+v, %v; want %s %s", tc.in, u, err, tc.addr, tc.path)
		assert.Equal(t, tc.path, u.Path, "ParseURL(%q) = %+v, %v; want %s %s", tc.in, u, err, tc.addr, tc.path)
	}
}
