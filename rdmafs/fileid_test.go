package rdmafs

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gdsload/gdsload/rdmafs/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// statT is the server-side truth a FileID is checked against.
func statT(t *testing.T, p string) *syscall.Stat_t {
	t.Helper()
	fi, err := os.Stat(p)
	require.NoError(t, err)
	st, ok := fi.Sys().(*syscall.Stat_t)
	require.True(t, ok)
	return st
}

// waitCtimeTick returns once a file written in dir now gets a change time
// after after: file systems stamp times from a coarse clock, so a change
// made within the same tick as the one before it would keep its ctime.
func waitCtimeTick(t *testing.T, dir string, after time.Time) {
	t.Helper()
	probe := filepath.Join(dir, ".ctime-probe")
	defer os.Remove(probe)
	require.Eventually(t, func() bool {
		if err := os.WriteFile(probe, nil, 0o644); err != nil {
			return false
		}
		st := statT(t, probe)
		return time.Unix(st.Ctim.Sec, st.Ctim.Nsec).After(after)
	}, 5*time.Second, time.Millisecond, "the file system's change-time clock does not advance")
}

// A client and a server that both know file identities agree on them:
// Stat and List report the file's change time, device and inode as the
// server's own stat sees them, on every transport.
func TestFileIDReported(t *testing.T) {
	for _, tp := range transports() {
		t.Run(tp.name, func(t *testing.T) {
			tr := tp.tr()
			ts := startServer(t, ServerConfig{}, tr)
			writeFile(t, ts.root, "f", 5000, 1)
			st := statT(t, filepath.Join(ts.root, "f"))
			want := FileID{Ctime: time.Unix(st.Ctim.Sec, st.Ctim.Nsec), Dev: st.Dev, Ino: st.Ino}
			cl := dialTest(t, ts, tr)

			fi, err := cl.Stat(t.Context(), "f")
			require.NoError(t, err)
			id, ok := fi.FileID()
			require.True(t, ok, "STAT_OK carries the file's identity")
			assert.Equal(t, want.Dev, id.Dev)
			assert.Equal(t, want.Ino, id.Ino)
			assert.True(t, want.Ctime.Equal(id.Ctime), "ctime %s, server's %s", id.Ctime, want.Ctime)

			ents, err := cl.List(t.Context(), "")
			require.NoError(t, err)
			require.Len(t, ents, 1)
			lid, ok := ents[0].FileID()
			require.True(t, ok, "LIST_OK entries carry the file's identity")
			assert.Equal(t, id.Ino, lid.Ino)
			assert.True(t, id.Ctime.Equal(lid.Ctime))
		})
	}
}

// rawHello runs the handshake as a client sending HELLO flags and returns
// the WELCOME payload.
func rawHello(t *testing.T, r *raw, flags uint32) []byte {
	t.Helper()
	hello := wire.Hello{Nonce: newNonce(), Flags: flags}
	r.send(wire.TypeHello, 0, hello.Append(nil))
	h, p, err := r.recv()
	require.NoError(t, err)
	require.Equal(t, wire.TypeChallenge, h.Type)
	ch, err := wire.DecodeChallenge(p)
	require.NoError(t, err)
	r.send(wire.TypeAuth, 0, wire.Auth{Proof: clientProof(testTok, &hello.Nonce, &ch.Nonce)}.Append(nil))
	h, p, err = r.recv()
	require.NoError(t, err)
	require.Equal(t, wire.TypeWelcome, h.Type, "%q", p)
	return append([]byte(nil), p...)
}

// rawReply sends one request as id and returns its reply's payload.
func rawReply(t *testing.T, r *raw, id uint32, typ wire.Type, payload []byte, want wire.Type) []byte {
	t.Helper()
	r.send(typ, id, payload)
	h, p, err := r.recv()
	require.NoError(t, err)
	require.Equal(t, want, h.Type, "%q", p)
	return append([]byte(nil), p...)
}

// The server speaks to each client in the layouts it asked for: a client
// from before file identities (HELLO flags 0) gets the version 1 WELCOME,
// STAT_OK and LIST_OK, byte for byte the sizes it decodes; one that asks,
// with flag bits the server does not know beside, is granted FlagFileID
// alone and gets the identities.
func TestFileIDNegotiation(t *testing.T) {
	ts := startServer(t, ServerConfig{}, nil)
	writeFile(t, ts.root, "f", 100, 1)
	st := statT(t, filepath.Join(ts.root, "f"))
	for _, tc := range []struct {
		name          string
		flags         uint32
		welcome, stat int
		entry         int
		listFlags     uint8
	}{
		{"old client", 0, 16, wire.FileInfoSize, wire.ListEntrySize("f"), 0},
		{"new client", wire.FlagFileID, 20, wire.FileInfoSize + wire.FileIDSize, wire.ListEntrySize("f") + wire.FileIDSize, 2},
		{"unknown flags beside", 0xffffffff, 20, wire.FileInfoSize + wire.FileIDSize, wire.ListEntrySize("f") + wire.FileIDSize, 2},
		{"unknown flags only", 0xfffffffe, 16, wire.FileInfoSize, wire.ListEntrySize("f"), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rawDial(t, ts.addr)
			wp := rawHello(t, r, tc.flags)
			require.Len(t, wp, tc.welcome)
			if tc.welcome == 20 {
				assert.Equal(t, wire.FlagFileID, binary.BigEndian.Uint32(wp[16:]), "granted exactly the known flag")
			}

			sp := rawReply(t, r, 1, wire.TypeStat, wire.Stat{Name: "f"}.Append(nil), wire.TypeStatOK)
			require.Len(t, sp, tc.stat)
			fi, err := wire.DecodeFileInfo(sp)
			require.NoError(t, err)
			assert.Equal(t, uint64(100), fi.Size)
			if fi.HasID {
				assert.Equal(t, st.Ino, fi.Ino)
				assert.Equal(t, st.Ctim.Nano(), fi.Ctime)
			}

			lp := rawReply(t, r, 2, wire.TypeList, wire.List{Name: ""}.Append(nil), wire.TypeListOK)
			require.Len(t, lp, wire.ListHeaderSize+tc.entry)
			assert.Equal(t, tc.listFlags, lp[4], "LIST_OK flag byte")
		})
	}
}

// oldServerProxy forwards connections to addr with the HELLO's flags
// cleared: the server then answers exactly as a server from before file
// identities, which ignored HELLO flags, did.
func oldServerProxy(t *testing.T, addr string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				s, err := net.Dial("tcp", addr)
				if err != nil {
					return
				}
				defer s.Close()
				hello := make([]byte, wire.HeaderSize+wire.NonceSize+4)
				if _, err := io.ReadFull(c, hello); err != nil {
					return
				}
				clear(hello[len(hello)-4:])
				if _, err := s.Write(hello); err != nil {
					return
				}
				go func() { _, _ = io.Copy(c, s); c.Close() }()
				_, _ = io.Copy(s, c)
			})
		}
	})
	return ln.Addr().String()
}

// A client talking to a server from before file identities works with the
// checks that server allows: files open and read, no FileID is reported,
// and Verify still fails a file whose size changed.
func TestFileIDOldServer(t *testing.T) {
	ts := startServer(t, ServerConfig{}, nil)
	want := writeFile(t, ts.root, "f", 5000, 1)
	cl, err := Dial(t.Context(), oldServerProxy(t, ts.addr), WithToken(testTok), WithLogger(quietLogger()), WithTimeout(10*time.Second))
	require.NoError(t, err)
	defer cl.Close()

	f, err := cl.Open(t.Context(), "f")
	require.NoError(t, err)
	_, ok := f.Stat().FileID()
	assert.False(t, ok, "an old server reports no identity")
	got := make([]byte, len(want))
	_, err = f.ReadAt(got, 0)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	require.NoError(t, f.Verify(), "an unchanged file verifies")

	ents, err := cl.List(t.Context(), "")
	require.NoError(t, err)
	require.Len(t, ents, 1)
	_, ok = ents[0].FileID()
	assert.False(t, ok)

	require.NoError(t, os.WriteFile(filepath.Join(ts.root, "f"), []byte("short"), 0o644))
	err = f.Verify()
	require.ErrorIs(t, err, ErrChanged)
	assert.Contains(t, err.Error(), "size 5, was 5000")
}

// A file opened with an identity whose check comes back without one (an
// older server took over the address) fails: its change cannot be ruled
// out.
func TestFileIDLostAfterOpen(t *testing.T) {
	ts := startServer(t, ServerConfig{}, nil)
	writeFile(t, ts.root, "f", 100, 1)
	newer := dialTest(t, ts, nil)
	fi, err := newer.Stat(t.Context(), "f")
	require.NoError(t, err)
	older, err := Dial(t.Context(), oldServerProxy(t, ts.addr), WithToken(testTok), WithLogger(quietLogger()))
	require.NoError(t, err)
	defer older.Close()
	f, err := older.OpenInfo(t.Context(), "f", fi)
	require.NoError(t, err)
	err = f.Verify()
	require.ErrorIs(t, err, ErrChanged)
	assert.Contains(t, err.Error(), "reports no change time or inode")
}

// Verify fails a file rewritten in a way that keeps its size and
// modification time (the time set back after the write, as touch -d or
// os.Chtimes do), and a file replaced by rename with one of the same
// size, time and bytes; it passes a file only read.
func TestFileVerifyIdentity(t *testing.T) {
	ts := startServer(t, ServerConfig{}, nil)
	cl := dialTest(t, ts, nil)
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, p string)
		want   string
	}{
		{"read only", func(t *testing.T, p string) {
			_, err := os.ReadFile(p)
			require.NoError(t, err)
		}, ""},
		{"same-size rewrite, mtime restored", func(t *testing.T, p string) {
			require.NoError(t, os.WriteFile(p, make([]byte, 4096), 0o644))
			require.NoError(t, os.Chtimes(p, old, old))
		}, "status changed at"},
		{"replaced by rename", func(t *testing.T, p string) {
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			tmp := p + ".new"
			require.NoError(t, os.WriteFile(tmp, b, 0o644))
			require.NoError(t, os.Chtimes(tmp, old, old))
			require.NoError(t, os.Rename(tmp, p))
		}, "replaced: inode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := filepath.Base(t.Name())
			p := filepath.Join(ts.root, name)
			writeFile(t, ts.root, name, 4096, 3)
			require.NoError(t, os.Chtimes(p, old, old))
			st := statT(t, p)
			f, err := cl.Open(t.Context(), name)
			require.NoError(t, err)
			waitCtimeTick(t, ts.root, time.Unix(st.Ctim.Sec, st.Ctim.Nsec))
			tc.change(t, p)
			now := statT(t, p)
			require.Equal(t, st.Size, now.Size, "the change keeps the size")
			require.Equal(t, st.Mtim, now.Mtim, "the change keeps the modification time")
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			err = f.VerifyContext(ctx)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrChanged)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
