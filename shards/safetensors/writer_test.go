package safetensors

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriterStreamsLikeEncode(t *testing.T) {
	tensors := allDtypes()
	var want bytes.Buffer
	require.NoError(t, Encode(&want, tensors, map[string]string{"k": "v"}))
	specs := make([]TensorSpec, len(tensors))
	data := map[string][]byte{}
	for i, td := range tensors {
		specs[i] = TensorSpec{Name: td.Name, Dtype: td.Dtype, Shape: td.Shape}
		data[td.Name] = td.Data
	}
	var got bytes.Buffer
	w, err := NewWriter(&got, specs, map[string]string{"k": "v"})
	require.NoError(t, err)
	headerLen := got.Len()
	var next int64
	for _, ti := range w.Layout() {
		require.Equal(t, next, ti.Begin, "layout of %q is [%d, %d), want to begin at %d with %d bytes", ti.Name, ti.Begin, ti.End, next, len(data[ti.Name]))
		require.Equal(t, int64(len(data[ti.Name])), ti.Bytes(), "layout of %q is [%d, %d), want to begin at %d with %d bytes", ti.Name, ti.Begin, ti.End, next, len(data[ti.Name]))
		next = ti.End
		// Stream in two pieces, as a device-to-host copy loop would.
		d := data[ti.Name]
		_, err := w.Write(d[:len(d)/2])
		require.NoError(t, err)
		_, err = w.Write(d[len(d)/2:])
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())
	require.Equal(t, want.Bytes(), got.Bytes(), "streamed file differs from Encode's")
	_, err = w.Write([]byte{0})
	assert.ErrorIs(t, err, ErrDataRegionLength, "write past the end: got %v, %d bytes written", err, got.Len()-want.Len())
	assert.Equal(t, want.Len(), got.Len(), "write past the end: got %v, %d bytes written", err, got.Len()-want.Len())

	// A short data region is reported by Close.
	got.Reset()
	w, err = NewWriter(&got, specs, nil)
	require.NoError(t, err)
	_, err = w.Write(make([]byte, 10))
	require.NoError(t, err)
	err = w.Close()
	assert.ErrorIs(t, err, ErrDataRegionLength, "short close: got %v, want ErrDataRegionLength", err)
	assert.Equal(t, 0, headerLen%8, "header prefix of %d bytes is not a multiple of 8", headerLen)
}
