package loader

import (
	"fmt"

	"github.com/gdsload/gdsload/cufile"
)

// GPUProbe is what the GPU stack offers a load, as `gdsload doctor`
// reports it: the GPUs the CUDA runtime sees, the driver and runtime
// versions, the mode cuFile runs in and why, its properties, and the route
// a load to GPU Device would take under the auto policy, with the reason.
type GPUProbe struct {
	GPUCount           int                `json:"gpu_count"`
	GPUError           string             `json:"gpu_error,omitempty"`
	CUDADriverVersion  string             `json:"cuda_driver_version,omitempty"`
	CUDARuntimeVersion string             `json:"cuda_runtime_version,omitempty"`
	GDSMode            cufile.Mode        `json:"gds_mode"`
	GDSReason          string             `json:"gds_reason"`
	CuFileProperties   *cufile.Properties `json:"cufile_properties,omitempty"`
	GPULoad            GPULoadProbe       `json:"gpu_load"`
	GDSMessages        string             `json:"gds_messages,omitempty"` // libcufile's own lines at driver open
}

// GPULoadProbe is the route a load to a GPU would take.
type GPULoadProbe struct {
	Device int    `json:"device"`
	Path   string `json:"path"` // gds, bounce, or none
	Reason string `json:"reason"`
}

// Probe reports what the stack offers a load to GPU device. It never
// fails: what is missing is in the report. It opens the cuFile driver if
// it can (Close drops it).
func (stack *GPUStack) Probe(device int) GPUProbe { return stack.ProbeData(device, "", "") }

// ProbeData is Probe for a load of the data at dataPath: the route a load
// to GPU device takes is the one the route profile at profile chooses,
// as WithRouteProfile has the auto policy choose it.
func (stack *GPUStack) ProbeData(device int, profile, dataPath string) GPUProbe {
	var r GPUProbe
	if stack.Runtime != nil {
		n, err := stack.Runtime.DeviceCount()
		r.GPUCount = n
		if err != nil {
			r.GPUError = err.Error()
		}
		if v, err := stack.Runtime.DriverVersion(); err == nil && v > 0 {
			r.CUDADriverVersion = fmt.Sprintf("%d.%d", v/1000, (v%1000)/10)
		}
		r.CUDARuntimeVersion = stack.Runtime.Library().Version
	} else {
		r.GPUError = stack.RuntimeErr.Error()
	}
	r.GDSMode, r.GDSReason = stack.GDSMode()
	if drv, err := stack.Driver(); err == nil {
		if p, err := drv.Properties(); err == nil {
			r.CuFileProperties = &p
		}
	}
	if stack.CuFile != nil {
		r.GDSMessages = stack.CuFile.Driver().Messages()
	}
	route, why, err := SelectGPURoute(stack, device, "auto")
	if err == nil {
		route, why = adviseRoute(profile, dataPath, stack, device, route, why)
	}
	r.GPULoad = GPULoadProbe{Device: device, Path: string(route), Reason: why}
	if route == "" {
		r.GPULoad.Path = "none"
	}
	return r
}
