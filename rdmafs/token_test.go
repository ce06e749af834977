package rdmafs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadTokenFile(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		content string
		mode    os.FileMode
		want    string
		errHas  string
	}{
		{"trailing newline trimmed", "0123456789abcdefXYZ\n", 0o600, "0123456789abcdefXYZ", ""},
		{"crlf trimmed", "0123456789abcdefXYZ\r\n", 0o400, "0123456789abcdefXYZ", ""},
		{"only one newline trimmed", "0123456789abcdefXYZ\n\n", 0o600, "0123456789abcdefXYZ\n", ""},
		{"group readable", "0123456789abcdefXYZ", 0o640, "", "chmod 600"},
		{"world readable", "0123456789abcdefXYZ", 0o604, "", "chmod 600"},
		{"empty", "\n", 0o600, "", "empty"},
		{"short", "abc\n", 0o600, "", "at least"},
		{"too large", strings.Repeat("x", 5000), 0o600, "", "larger than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_"))
			if err := os.WriteFile(p, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, tc.mode); err != nil {
				t.Fatal(err)
			}
			tok, err := ReadTokenFile(p)
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("err = %v, want one mentioning %q", err, tc.errHas)
				}
				return
			}
			if err != nil || string(tok) != tc.want {
				t.Fatalf("token %q, err %v; want %q", tok, err, tc.want)
			}
		})
	}
	if _, err := ReadTokenFile(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("missing file accepted")
	}
}
