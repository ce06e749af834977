package fileops

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestDefault(t *testing.T) {
	dir := t.TempDir()
	fs := Default()
	p := filepath.Join(dir, "a")
	f, err := fs.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := f.Pwrite([]byte("hello"), 3); n != 5 || err != nil {
		t.Fatalf("Pwrite = %d, %v", n, err)
	}
	if n, err := f.Write([]byte("abc")); n != 3 || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	for _, sync := range []func() error{f.Sync, f.Datasync} {
		if err := sync(); err != nil {
			t.Fatal(err)
		}
	}
	got := make([]byte, 8)
	if n, err := f.Pread(got, 0); n != 8 || err != nil || !bytes.Equal(got, []byte("abchello")) {
		t.Fatalf("Pread = %d, %v, %q", n, err, got)
	}
	if n, err := f.Pread(got, 8); n != 0 || err != nil {
		t.Fatalf("Pread at the end = %d, %v; want 0, nil as pread(2)", n, err)
	}
	if err := f.Truncate(2); err != nil {
		t.Fatal(err)
	}
	if st, err := f.Stat(); err != nil || st.Size() != 2 || f.Name() != p || f.Fd() == 0 {
		t.Fatalf("Stat = %v, %v; name %s", st, err, f.Name())
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	q := filepath.Join(dir, "b")
	if err := fs.Rename(p, q); err != nil {
		t.Fatal(err)
	}
	if err := fs.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	if err := fs.Remove(q); err != nil {
		t.Fatal(err)
	}
	if err := fs.SyncDir(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("SyncDir of a missing directory succeeded")
	}
}
