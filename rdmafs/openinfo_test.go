package rdmafs

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// Files opened from a listing read like opened ones, with no request to
// open them; directories are refused.
func TestOpenInfoFromList(t *testing.T) {
	root := t.TempDir()
	want := []byte("listed, not stat'ed")
	if err := os.WriteFile(filepath.Join(root, "a.bin"), want, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	cl := dialTest(t, startServer(t, serverConfig{Root: root}, nil), nil)
	ctx := context.Background()
	ents, err := cl.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var opened, refused int
	for _, e := range ents {
		f, err := cl.OpenInfo(ctx, e.Name(), e)
		if e.IsDir() {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("OpenInfo(%s, a directory): %v, want ErrInvalid", e.Name(), err)
			}
			refused++
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		got := make([]byte, f.Size())
		if _, err := f.ReadAt(got, 0); err != nil && err != io.EOF {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("read %q, want %q", got, want)
		}
		st, err := cl.Stat(ctx, e.Name())
		if err != nil {
			t.Fatal(err)
		}
		if !st.ModTime().Equal(e.ModTime()) || st.Size() != e.Size() {
			t.Fatalf("List says %v/%d, Stat says %v/%d", e.ModTime(), e.Size(), st.ModTime(), st.Size())
		}
		opened++
	}
	if opened != 1 || refused != 1 {
		t.Fatalf("opened %d, refused %d; want 1 and 1", opened, refused)
	}
}
