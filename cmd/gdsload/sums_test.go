package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdsload/gdsload/loader"
)

func TestWriteSums(t *testing.T) {
	tests := []struct {
		name string
		f    loader.FileResult
		c    loader.Checksum
		want string
	}{
		{"plain", loader.FileResult{Name: "a.bin", SHA256: "ab"}, loader.ChecksumSHA256, "ab  a.bin\n"},
		{"space kept", loader.FileResult{Name: "d/a b.bin", SHA256: "ab"}, loader.ChecksumSHA256, "ab  d/a b.bin\n"},
		{"newline", loader.FileResult{Name: "a\nb", SHA256: "ab"}, loader.ChecksumSHA256, "\\ab  a\\nb\n"},
		{"backslash and CR", loader.FileResult{Name: `a\b` + "\r", SHA256: "ab"}, loader.ChecksumSHA256, `\ab  a\\b\r` + "\n"},
		{"crc32c", loader.FileResult{Name: "a.bin", CRC32C: "0000abcd"}, loader.ChecksumCRC32C, "0000abcd  a.bin\n"},
		{"no digest of that kind", loader.FileResult{Name: "a.bin", SHA256: "ab"}, loader.ChecksumCRC32C, ""},
		{"part of a file", loader.FileResult{Name: "m.safetensors", Offset: 88, Bytes: 28, Partial: true, SHA256: "ab"}, loader.ChecksumSHA256,
			"sha256 of bytes [88, 116)  ab  m.safetensors\n"},
		{"part of a file, escaped name", loader.FileResult{Name: "m\n.npy", Offset: 128, Bytes: 4, Partial: true, SHA256: "ab"}, loader.ChecksumSHA256,
			"sha256 of bytes [128, 132)  ab  m\\n.npy\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := writeSums(&b, []loader.FileResult{tc.f}, tc.c); err != nil {
				t.Fatal(err)
			}
			if b.String() != tc.want {
				t.Fatalf("WriteSums = %q, want %q", b.String(), tc.want)
			}
		})
	}
}

// GNU sha256sum -c checks what WriteSums writes for whole files, odd names
// included, and refuses a partial digest as a line it cannot read instead
// of reporting the file FAILED.
func TestWriteSumsCheckedBySha256sum(t *testing.T) {
	if out, err := exec.Command("sha256sum", "--version").Output(); err != nil || !strings.Contains(string(out), "GNU coreutils") {
		t.Skipf("no GNU sha256sum here (%v): the line format is checked by TestWriteSums", err)
	}
	dir := t.TempDir()
	var files []loader.FileResult
	for i, name := range []string{"plain.bin", "new\nline.bin", `back\slash.bin`, "car\rriage.bin", "sp ace.bin"} {
		data := bytes.Repeat([]byte{byte(i)}, 100+i)
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		files = append(files, loader.FileResult{Name: name, Bytes: int64(len(data)), SHA256: hex.EncodeToString(sum[:])})
	}
	var b bytes.Buffer
	if err := writeSums(&b, files, loader.ChecksumSHA256); err != nil {
		t.Fatal(err)
	}
	check := func(sums []byte) (string, error) {
		cmd := exec.Command("sha256sum", "-c", "-")
		cmd.Dir, cmd.Stdin = dir, bytes.NewReader(sums)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := check(b.Bytes()); err != nil || strings.Count(out, ": OK") != len(files) {
		t.Fatalf("sha256sum -c: %v\n%s\nof\n%s", err, out, b.String())
	}
	b.Reset()
	part := files[0]
	part.Offset, part.Bytes, part.Partial = 10, 90, true
	if err := writeSums(&b, []loader.FileResult{part}, loader.ChecksumSHA256); err != nil {
		t.Fatal(err)
	}
	out, err := check(b.Bytes())
	if err == nil || strings.Contains(out, "FAILED") || !strings.Contains(out, "no properly formatted") {
		t.Fatalf("sha256sum -c of a partial digest: %v\n%s", err, out)
	}
}

// FuzzWriteSums: whatever the name, a digest is one line, and reading its
// name back as coreutils does (a leading backslash marks \\, \n and \r
// escapes) gives the name.
func FuzzWriteSums(f *testing.F) {
	for _, s := range []string{"a.bin", "a\nb", `a\b`, "a\rb\\n", `\`, "sp ace"} {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, name string, partial bool) {
		var b bytes.Buffer
		fr := loader.FileResult{Name: name, SHA256: "ab", Offset: 1, Bytes: 2, Partial: partial}
		if err := writeSums(&b, []loader.FileResult{fr}, loader.ChecksumSHA256); err != nil {
			t.Fatal(err)
		}
		line, ok := strings.CutSuffix(b.String(), "\n")
		if !ok || strings.ContainsAny(line, "\n\r") {
			t.Fatalf("writeSums(%q) = %q: not one line", name, b.String())
		}
		escaped := strings.HasPrefix(line, `\`)
		if partial {
			line, ok = strings.CutPrefix(line, "sha256 of bytes [1, 3)  ")
		} else {
			line = strings.TrimPrefix(line, `\`)
		}
		got, ok2 := strings.CutPrefix(line, "ab  ")
		if !ok || !ok2 {
			t.Fatalf("writeSums(%q) = %q", name, b.String())
		}
		if escaped || partial {
			got = unescapeSumName(got)
		}
		if got != name {
			t.Fatalf("writeSums(%q) names %q", name, got)
		}
	})
}

// unescapeSumName undoes coreutils' escaping of a checksum line's name.
func unescapeSumName(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			default:
				b.WriteByte(s[i])
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
