package main

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

// encodeLine is what encoding/json's Encoder writes for l, the reference
// the hand-written encoder must match byte for byte.
func encodeLine(t testing.TB, l sampleLine) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(l); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestSampleLineJSONMatchesEncodingJSON(t *testing.T) {
	for _, l := range []sampleLine{
		{Key: "s000001-000042", Shard: "shard-000001.tar.zst", Epoch: 0, Position: 42, Bytes: 51234},
		{Key: "a/b/c", Shard: "train/shard-{0}.tar", Epoch: 3, Position: math.MaxInt64, Padding: true, Bytes: 0},
		{Key: "", Shard: "", Epoch: -1, Position: math.MinInt64, Bytes: -5},
		{Key: `quote " backslash \ slash /`, Shard: "tab\tnewline\ncr\r"},
		{Key: "<html> & friends", Shard: "\x00\x01\x1f\x7f"},
		{Key: "héllo wörld ✓", Shard: "\u2028\u2029"},
		{Key: "invalid \xff\xfe utf-8", Shard: "\xc3"},
	} {
		got := l.appendJSON([]byte("prefix"))
		want := append([]byte("prefix"), encodeLine(t, l)...)
		if !bytes.Equal(got, want) {
			t.Errorf("%+v:\n got %q\nwant %q", l, got, want)
		}
	}
}

func FuzzSampleLineJSON(f *testing.F) {
	f.Add("s000001-000042", "shard-000001.tar.zst", int64(0), int64(42), false, int64(51234))
	f.Add("<&>\"\\\x00\xff", "\u2028", int64(-1), int64(7), true, int64(0))
	f.Fuzz(func(t *testing.T, key, shard string, epoch, position int64, padding bool, n int64) {
		l := sampleLine{Key: key, Shard: shard, Epoch: epoch, Position: position, Padding: padding, Bytes: n}
		if got, want := l.appendJSON(nil), encodeLine(t, l); !bytes.Equal(got, want) {
			t.Fatalf("%+v:\n got %q\nwant %q", l, got, want)
		}
	})
}
