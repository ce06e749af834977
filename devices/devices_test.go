package devices

import "testing"

func TestPCISysfsName(t *testing.T) {
	for in, want := range map[string]string{"00000000:3B:00.0": "0000:3b:00.0", "0000:3B:00.0": "0000:3b:00.0"} {
		if got := pciSysfsName(in); got != want {
			t.Errorf("pciSysfsName(%q) = %q, want %q", in, got, want)
		}
	}
}

// A machine without NVML, NVMe or RDMA devices (an empty sysfs tree) is
// reported as such, with empty lists rather than nulls in JSON.
func TestCollectEmpty(t *testing.T) {
	r := Collect(Options{SysRoot: t.TempDir(), NoNVML: true})
	if r.NVMLError == "" || r.GPUs == nil || r.NVMe == nil || r.RDMA == nil || len(r.NVMe)+len(r.RDMA) != 0 {
		t.Fatalf("report %+v", r)
	}
}
