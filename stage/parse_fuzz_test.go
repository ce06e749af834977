package stage

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzParseJournal: any journal bytes give records (damaged lines are
// skipped), and what compaction writes back parses to the same records.
func FuzzParseJournal(f *testing.F) {
	f.Add([]byte(`{"rel":"a.bin","source":"/s/a.bin","size":3,"mtime_ns":1,"checksum":"sha256","digest":"ab","ino":7,"dest_mtime_ns":2}` + "\n"))
	f.Add([]byte(`{"rel":"a.bin","size":3}` + "\n" + `{"rel":"a.bin","size":4}` + "\n" + `{"rel":"b`))
	f.Add([]byte("\n\n{}\n[1]\n" + `{"rel":""}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		recs := parseJournal(b)
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		for rel, r := range recs {
			if rel == "" || r.Rel != rel {
				t.Fatalf("record %+v under %q", r, rel)
			}
			if err := enc.Encode(r); err != nil {
				t.Fatal(err)
			}
		}
		if again := parseJournal(buf.Bytes()); !reflect.DeepEqual(again, recs) {
			t.Fatalf("compacted journal parses as %+v, want %+v", again, recs)
		}
	})
}

// A damaged line of any length hides nothing after it (a line scanner
// with a 1 MiB limit used to stop there).
func TestParseJournalLongLine(t *testing.T) {
	b := append(bytes.Repeat([]byte("x"), 2<<20), '\n')
	b = append(b, `{"rel":"after.bin","size":3}`+"\n"...)
	recs := parseJournal(b)
	if r, ok := recs["after.bin"]; !ok || r.Size != 3 {
		t.Errorf("records %v, want after.bin", recs)
	}
}
