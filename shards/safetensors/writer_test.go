package safetensors

import (
	"bytes"
	"errors"
	"testing"
)

func TestWriterStreamsLikeEncode(t *testing.T) {
	tensors := allDtypes()
	var want bytes.Buffer
	if err := Encode(&want, tensors, map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	specs := make([]TensorSpec, len(tensors))
	data := map[string][]byte{}
	for i, td := range tensors {
		specs[i] = TensorSpec{Name: td.Name, Dtype: td.Dtype, Shape: td.Shape}
		data[td.Name] = td.Data
	}
	var got bytes.Buffer
	w, err := NewWriter(&got, specs, map[string]string{"k": "v"})
	if err != nil {
		t.Fatal(err)
	}
	headerLen := got.Len()
	var next int64
	for _, ti := range w.Layout() {
		if ti.Begin != next || ti.Bytes() != int64(len(data[ti.Name])) {
			t.Fatalf("layout of %q is [%d, %d), want to begin at %d with %d bytes", ti.Name, ti.Begin, ti.End, next, len(data[ti.Name]))
		}
		next = ti.End
		// Stream in two pieces, as a device-to-host copy loop would.
		d := data[ti.Name]
		if _, err := w.Write(d[:len(d)/2]); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(d[len(d)/2:]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatal("streamed file differs from Encode's")
	}
	if _, err := w.Write([]byte{0}); !errors.Is(err, ErrDataRegionLength) || got.Len() != want.Len() {
		t.Errorf("write past the end: got %v, %d bytes written", err, got.Len()-want.Len())
	}

	// A short data region is reported by Close.
	got.Reset()
	w, err = NewWriter(&got, specs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); !errors.Is(err, ErrDataRegionLength) {
		t.Errorf("short close: got %v, want ErrDataRegionLength", err)
	}
	if headerLen%8 != 0 {
		t.Errorf("header prefix of %d bytes is not a multiple of 8", headerLen)
	}
}
