package safetensors

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPlan(t *testing.T) {
	tensors := []TensorData{
		{Name: "w", Dtype: "F32", Shape: []int64{1000}, Data: patterned(4000, 1)},
		{Name: "b", Dtype: "F16", Shape: []int64{3}, Data: patterned(6, 2)},
		{Name: "e", Dtype: "U8", Shape: []int64{0}},
	}
	var buf bytes.Buffer
	require.NoError(t, Encode(&buf, tensors, map[string]string{"k": "v"}))
	file := buf.Bytes()
	h, err := parseBytes(file)
	require.NoError(t, err)
	for _, align := range []int64{1, 8, 512, 4096, 1 << 20} {
		p, err := h.Plan(align)
		require.NoError(t, err)
		msg := fmt.Sprintf("align %d: FileOffset %d is not DataOffset %d rounded down", align, p.FileOffset, h.DataOffset)
		assert.Zero(t, p.FileOffset%align, msg)
		assert.LessOrEqual(t, p.FileOffset, h.DataOffset, msg)
		assert.Less(t, h.DataOffset-p.FileOffset, align, msg)
		if assert.Equal(t, int64(len(file)), p.FileOffset+p.Length, "align %d: range [%d,+%d) slack %d", align, p.FileOffset, p.Length, p.HeadSlack) {
			assert.Equal(t, h.DataOffset-p.FileOffset, p.HeadSlack, "align %d: range [%d,+%d) slack %d", align, p.FileOffset, p.Length, p.HeadSlack)
		}
		assert.Zero(t, p.AllocLength%align, "align %d: AllocLength %d for Length %d", align, p.AllocLength, p.Length)
		assert.GreaterOrEqual(t, p.AllocLength, p.Length, "align %d: AllocLength %d for Length %d", align, p.AllocLength, p.Length)
		assert.Less(t, p.AllocLength-p.Length, align, "align %d: AllocLength %d for Length %d", align, p.AllocLength, p.Length)
		// Simulate the load: read the planned range into an allocation and
		// check every view sees its tensor's bytes at a congruent position.
		alloc := make([]byte, p.AllocLength)
		copy(alloc, file[p.FileOffset:])
		require.Len(t, p.Views, len(tensors), "%d views", len(p.Views))
		for i, v := range p.Views {
			ti := h.Tensors[i]
			fileOff := h.DataOffset + ti.Begin
			assert.Equal(t, fileOff%align, v.Offset%align, "align %d: %q at %d, file offset %d, not congruent", align, v.Name, v.Offset, fileOff)
			assert.Equal(t, file[fileOff:fileOff+ti.Bytes()], alloc[v.Offset:v.Offset+v.Bytes], "align %d: view %q does not hold the tensor's bytes", align, v.Name)
			assert.Equal(t, ti.Name, v.Name, "align %d: view %q does not hold the tensor's bytes", align, v.Name)
			assert.Equal(t, ti.Dtype, v.Dtype, "align %d: view %q does not hold the tensor's bytes", align, v.Name)
		}
	}
	_, err = h.Plan(0)
	assert.Error(t, err, "Plan(0) accepted")
}
