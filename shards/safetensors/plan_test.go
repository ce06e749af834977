package safetensors

import (
	"bytes"
	"testing"
)

func TestPlan(t *testing.T) {
	tensors := []TensorData{
		{Name: "w", Dtype: "F32", Shape: []int64{1000}, Data: patterned(4000, 1)},
		{Name: "b", Dtype: "F16", Shape: []int64{3}, Data: patterned(6, 2)},
		{Name: "e", Dtype: "U8", Shape: []int64{0}},
	}
	var buf bytes.Buffer
	if err := Encode(&buf, tensors, map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	file := buf.Bytes()
	h, err := parseBytes(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, align := range []int64{1, 8, 512, 4096, 1 << 20} {
		p, err := h.Plan(align)
		if err != nil {
			t.Fatal(err)
		}
		if p.FileOffset%align != 0 || p.FileOffset > h.DataOffset || h.DataOffset-p.FileOffset >= align {
			t.Errorf("align %d: FileOffset %d is not DataOffset %d rounded down", align, p.FileOffset, h.DataOffset)
		}
		if p.FileOffset+p.Length != int64(len(file)) || p.HeadSlack != h.DataOffset-p.FileOffset {
			t.Errorf("align %d: range [%d,+%d) slack %d", align, p.FileOffset, p.Length, p.HeadSlack)
		}
		if p.AllocLength%align != 0 || p.AllocLength < p.Length || p.AllocLength-p.Length >= align {
			t.Errorf("align %d: AllocLength %d for Length %d", align, p.AllocLength, p.Length)
		}
		// Simulate the load: read the planned range into an allocation and
		// check every view sees its tensor's bytes at a congruent position.
		alloc := make([]byte, p.AllocLength)
		copy(alloc, file[p.FileOffset:])
		if len(p.Views) != len(tensors) {
			t.Fatalf("%d views", len(p.Views))
		}
		for i, v := range p.Views {
			ti := h.Tensors[i]
			fileOff := h.DataOffset + ti.Begin
			if v.Offset%align != fileOff%align {
				t.Errorf("align %d: %q at %d, file offset %d, not congruent", align, v.Name, v.Offset, fileOff)
			}
			if !bytes.Equal(alloc[v.Offset:v.Offset+v.Bytes], file[fileOff:fileOff+ti.Bytes()]) || v.Name != ti.Name || v.Dtype != ti.Dtype {
				t.Errorf("align %d: view %q does not hold the tensor's bytes", align, v.Name)
			}
		}
	}
	if _, err := h.Plan(0); err == nil {
		t.Error("Plan(0) accepted")
	}
}
