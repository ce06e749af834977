package devices

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPCISysfsName(t *testing.T) {
	for in, want := range map[string]string{"00000000:3B:00.0": "0000:3b:00.0", "0000:3B:00.0": "0000:3b:00.0"} {
		got := pciSysfsName(in)
		assert.Equal(t, want, got, "pciSysfsName(%q) = %q, want %q", in, got, want)
	}
}

// A machine without NVML, NVMe or RDMA devices (an empty sysfs tree) is
// reported as such, with empty lists rather than nulls in JSON.
func TestCollectEmpty(t *testing.T) {
	r := Collect(Options{SysRoot: t.TempDir(), NoNVML: true})
	require.NotEmpty(t, r.NVMLError, "report %+v", r)
	require.NotNil(t, r.GPUs, "report %+v", r)
	require.NotNil(t, r.NVMe, "report %+v", r)
	require.NotNil(t, r.RDMA, "report %+v", r)
	require.Equal(t, 0, len(r.NVMe)+len(r.RDMA), "report %+v", r)
}
