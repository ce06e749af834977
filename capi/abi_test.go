package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gdsload/gdsload/shards/safetensors"
)

// The C ABI as a C program sees it: libgdsload.so built from this package,
// testdata/abi_check.c compiled against gdsload.h and run.
func TestCABIFromC(t *testing.T) {
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "gcc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		t.Fatalf("a C compiler is needed for the ABI test: %v", err)
	}
	dir := t.TempDir()
	so := filepath.Join(dir, "libgdsload.so")
	build := exec.Command("go", "build", "-buildmode=c-shared", "-o", so, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -buildmode=c-shared: %v\n%s", err, out)
	}
	bin := filepath.Join(dir, "abi_check")
	if out, err := exec.Command(cc, "-Wall", "-Werror", "-o", bin, "testdata/abi_check.c", so, "-Wl,-rpath,"+dir).CombinedOutput(); err != nil {
		t.Fatalf("compiling testdata/abi_check.c against gdsload.h: %v\n%s", err, out)
	}
	var data []byte
	for _, v := range []float32{1.5, -2, 3.25} {
		data = binary.LittleEndian.AppendUint32(data, math.Float32bits(v))
	}
	var file bytes.Buffer
	if err := safetensors.Encode(&file, []safetensors.TensorData{{Name: "w", Dtype: "F32", Shape: []int64{3}, Data: data}}, nil); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "w.safetensors")
	corrupt := filepath.Join(dir, "corrupt.safetensors")
	if err := os.WriteFile(good, file.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(corrupt, file.Bytes()[:20], 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, good, filepath.Join(dir, "missing.safetensors"), corrupt).CombinedOutput()
	if err != nil {
		t.Fatalf("abi_check: %v\n%s", err, out)
	}
	got := string(out)
	for _, want := range []string{
		fmt.Sprintf("abi %d header %d\n", abiVersion, abiVersion),
		"info ok\n",
		"live 1\nvalues 1.5 -2 3.25\n",
		"versioned 1.0 readonly 1 device 1 past-the-end refused\n",
		"live 1\nlive 0\n",
		fmt.Sprintf("status %d: stat %s", statusNotFound, filepath.Join(dir, "missing.safetensors")),
		fmt.Sprintf("status %d: safetensors: %s", statusInvalid, corrupt),
	} {
		if !strings.Contains(got, want) {
			t.Errorf("abi_check output lacks %q:\n%s", want, got)
		}
	}
}

// gdsload.h's version and status codes are the ones the Go side uses.
func TestHeaderAgrees(t *testing.T) {
	h, err := os.ReadFile("gdsload.h")
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`#define GDSLOAD_ABI_VERSION (\d+)`).FindSubmatch(h); m == nil || string(m[1]) != fmt.Sprint(abiVersion) {
		t.Errorf("gdsload.h's GDSLOAD_ABI_VERSION is %q, the Go side's %d", m, abiVersion)
	}
	for name, st := range map[string]status{
		"GDSLOAD_OK": statusOK, "GDSLOAD_NOT_FOUND": statusNotFound, "GDSLOAD_PERMISSION": statusPermission,
		"GDSLOAD_INVALID": statusInvalid, "GDSLOAD_CANCELED": statusCanceled, "GDSLOAD_IO": statusIO,
		"GDSLOAD_PENDING": statusPending, "GDSLOAD_END": statusEnd, "GDSLOAD_UNAVAILABLE": statusUnavailable,
	} {
		if !regexp.MustCompile(fmt.Sprintf(`\b%s = %d,?\s`, name, st)).Match(h) {
			t.Errorf("gdsload.h does not define %s = %d", name, st)
		}
	}
}
