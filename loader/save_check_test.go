package loader

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckSavePath(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		path     string
		ok       bool
		notExist bool
	}{
		{"new file in a directory", filepath.Join(dir, "sub", "state.json"), true, false},
		{"existing file is replaced", file, true, false},
		{"missing directory", filepath.Join(dir, "nonexistent", "state.json"), false, true},
		{"parent is a file", filepath.Join(file, "state.json"), false, false},
		{"path is a directory", filepath.Join(dir, "sub"), false, false},
		{"name too long for the temporary file", filepath.Join(dir, strings.Repeat("n", 250)), false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckSavePath(tc.path)
			if tc.ok != (err == nil) {
				t.Fatalf("CheckSavePath(%s) = %v, want ok %v", tc.path, err, tc.ok)
			}
			if tc.notExist != (err != nil && errors.Is(err, fs.ErrNotExist)) {
				t.Fatalf("CheckSavePath(%s) = %v: want fs.ErrNotExist %v", tc.path, err, tc.notExist)
			}
			if _, serr := os.Stat(tc.path); tc.ok && tc.path != file && serr == nil {
				t.Fatalf("CheckSavePath(%s) created the file", tc.path)
			}
		})
	}
	// Nothing is left behind in the directories tried.
	for _, d := range []string{dir, filepath.Join(dir, "sub")} {
		ents, err := os.ReadDir(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if e.Name() != "file" && e.Name() != "sub" {
				t.Errorf("%s holds %s after the checks", d, e.Name())
			}
		}
	}
}
