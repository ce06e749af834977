package loader

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"testing"
)

// A load's result says which bytes of each file its digest covers.
func TestLoadResultSaysWhatTheDigestCovers(t *testing.T) {
	path := writeRandom(t, t.TempDir(), 10000, 3)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := OpenFile(path, DirectOff)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, tc := range []struct {
		name            string
		offset, length  int64
		partial         bool
		wantOff, wantTo int64
	}{
		{"whole file", 0, -1, false, 0, 10000},
		{"head", 0, 100, true, 0, 100},
		{"tail", 88, -1, true, 88, 10000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := Job{Source: f, Offset: tc.offset, Length: tc.length, Dest: NewHostBuffer(make([]byte, 10000))}
			res, err := Load(t.Context(), []Job{job}, Options{Checksum: ChecksumSHA256})
			if err != nil {
				t.Fatal(err)
			}
			got := res.Files[0]
			sum := sha256.Sum256(data[tc.wantOff:tc.wantTo])
			if got.Partial != tc.partial || got.Offset != tc.wantOff || got.Offset+got.Bytes != tc.wantTo || got.SHA256 != hex.EncodeToString(sum[:]) {
				t.Fatalf("file result %+v, want partial %v over [%d, %d)", got, tc.partial, tc.wantOff, tc.wantTo)
			}
		})
	}
}
