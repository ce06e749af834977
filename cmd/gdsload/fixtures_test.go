package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// The shipped fixtures in testdata/ inspect and load as documented in
// testdata/README.md.
func TestShippedFixtures(t *testing.T) {
	out, stderr, code := run(t, "inspect", "--json", "../../testdata/model.safetensors")
	require.Equal(t, 0, code, stderr)
	var st struct {
		Tensors []struct {
			Name  string  `json:"name"`
			Dtype string  `json:"dtype"`
			Shape []int64 `json:"shape"`
		} `json:"tensors"`
		Metadata map[string]string `json:"metadata"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	require.Len(t, st.Tensors, 2)
	require.Equal(t, "linear.weight", st.Tensors[0].Name)
	require.Equal(t, []int64{2, 3}, st.Tensors[0].Shape)
	require.Equal(t, "pt", st.Metadata["format"])

	out, stderr, code = run(t, "inspect", "--json", "../../testdata/array.npy")
	require.Equal(t, 0, code, stderr)
	var np struct {
		Dtype string  `json:"dtype"`
		Shape []int64 `json:"shape"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &np))
	require.Equal(t, "<f4", np.Dtype)
	require.Equal(t, []int64{3, 4}, np.Shape)

	out, stderr, code = run(t, "inspect", "--json", "../../testdata/shard-000000.tar")
	require.Equal(t, 0, code, stderr)
	var tar struct {
		Samples int `json:"samples"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &tar))
	require.Equal(t, 3, tar.Samples)

	out, stderr, code = run(t, "load", "--json", "--checksum", "sha256", "../../testdata/model.safetensors")
	require.Equal(t, 0, code, stderr)
	var ld checkpointJSON
	require.NoError(t, json.Unmarshal([]byte(out), &ld))
	require.Equal(t, 2, ld.Tensors)
	require.EqualValues(t, 28, ld.Bytes)
}
