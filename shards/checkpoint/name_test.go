package checkpoint

import "testing"

func TestIsCheckpointName(t *testing.T) {
	for name, want := range map[string]bool{
		"model.safetensors": true, "d/MODEL.SafeTensors": true, "model.safetensors.index.json": true,
		"rdmafs://h:1/x/w.npy": true, "index.json": false, "model.bin": false, "safetensors": false,
		"x.npy/": false, "a.tar": false,
	} {
		if got := IsCheckpointName(name); got != want {
			t.Errorf("IsCheckpointName(%q) = %v, want %v", name, got, want)
		}
	}
}
