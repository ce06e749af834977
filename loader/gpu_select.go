package loader

import (
	"fmt"
	"sync"

	"github.com/gdsload/gdsload/cufile"
)

// GPUStack is the GPU libraries of a process, opened once: the CUDA
// runtime and libcufile, each with the error that kept it from loading.
// It holds one reference to the cuFile driver from the first GPU path
// selection that opened it until Close, so later destinations do not pay
// for opening it again.
type GPUStack struct {
	// Runtime is the CUDA runtime, nil when RuntimeErr says why.
	Runtime    *cufile.Runtime
	RuntimeErr error
	// CuFile is libcufile, nil when CuFileErr says why.
	CuFile    *cufile.CuFile
	CuFileErr error

	cfg       cufile.Config // what it was opened with
	mu        sync.Mutex
	driverRef bool  // this stack holds a driver reference
	driverErr error // why the driver did not open, once tried
}

// OpenGPUStack loads the libraries cfg points at. It never fails: what is
// missing is recorded and explains later refusals.
func OpenGPUStack(cfg cufile.Config) *GPUStack {
	s := &GPUStack{cfg: cfg}
	s.Runtime, s.RuntimeErr = cufile.OpenRuntime(cfg)
	s.CuFile, s.CuFileErr = cufile.OpenCuFile(cfg)
	return s
}

// Driver opens the cuFile driver once for the stack and returns it.
func (s *GPUStack) Driver() (*cufile.Driver, error) {
	if s.CuFileErr != nil {
		return nil, s.CuFileErr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.driverRef && s.driverErr == nil {
		if err := s.CuFile.Driver().Open(); err != nil {
			s.driverErr = err
		} else {
			s.driverRef = true
		}
	}
	if s.driverErr != nil {
		return nil, s.driverErr
	}
	return s.CuFile.Driver(), nil
}

// Close drops the stack's driver reference, if it holds one.
func (s *GPUStack) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.driverRef {
		return nil
	}
	s.driverRef = false
	return s.CuFile.Driver().Close()
}

// GDSMode reports cuFile's mode and the evidence, or ModeUnavailable and
// why cuFile cannot be used.
func (s *GPUStack) GDSMode() (cufile.Mode, string) {
	drv, err := s.Driver()
	if err != nil {
		return cufile.ModeUnavailable, err.Error()
	}
	mode, why, err := drv.Mode()
	if err != nil {
		return cufile.ModeUnavailable, err.Error()
	}
	return mode, why
}

// SelectGPURoute picks the route to GPU device for a load: gds when
// libcufile opens in p2pdma or nvfs mode, else bounce. want is "" or
// "auto" for that choice, or RouteGDS or RouteBounce to insist. The reason
// says why better paths were refused ("libcufile.so.0 not found: ...",
// "cuFile in compat mode: ...", "cuFileDriverOpen failed:
// CU_FILE_DRIVER_NOT_INITIALIZED (5001) ...") or what was chosen. With no
// usable GPU, or when the path insisted on is impossible, it returns an
// error matching cufile.ErrUnavailable, and the reason says why.
func SelectGPURoute(s *GPUStack, device int, want Route) (Route, string, error) {
	switch want {
	case "", "auto", RouteGDS, RouteBounce:
	default:
		return "", "", fmt.Errorf("GPU route %q: want auto, gds or bounce", want)
	}
	if s.RuntimeErr != nil {
		why := "no GPU: " + s.RuntimeErr.Error()
		return "", why, unavailableReason(why)
	}
	if _, err := s.Runtime.Device(device); err != nil {
		why := "no GPU: " + err.Error()
		return "", why, unavailableReason(why)
	}
	if want == RouteBounce {
		return RouteBounce, "bounce asked for", nil
	}
	mode, why := s.GDSMode()
	switch {
	case mode == cufile.ModeP2PDMA || mode == cufile.ModeNVFS:
		return RouteGDS, fmt.Sprintf("cuFile in %s mode (%s)", mode, why), nil
	case want == RouteGDS && mode == cufile.ModeCompat:
		// Asked for: cuFile's POSIX fallback still works, only slower.
		return RouteGDS, fmt.Sprintf("gds asked for; cuFile in compat mode (%s)", why), nil
	case want == RouteGDS:
		return "", "gds refused: " + why, unavailableReason("gds refused: " + why)
	case mode == cufile.ModeCompat:
		return RouteBounce, fmt.Sprintf("gds refused: cuFile in compat mode (%s)", why), nil
	}
	return RouteBounce, "gds refused: " + why, nil
}

func unavailableReason(why string) error {
	return fmt.Errorf("%s (%w)", why, cufile.ErrUnavailable)
}

// DriverFor returns the cuFile driver a destination on route needs: the
// stack's driver for gds, nil for the other routes.
func (s *GPUStack) DriverFor(route Route) (*cufile.Driver, error) {
	if route != RouteGDS {
		return nil, nil
	}
	return s.Driver()
}

// RequireRoute checks that a load can take route path on this stack, for
// health checks that must fail when it cannot (gdsload doctor --require):
// nil when it can, else an error matching cufile.ErrUnavailable that says
// why. gds needs cuFile in p2pdma or nvfs mode on GPU device (compat mode
// is cuFile's POSIX fallback, not GPUDirect Storage); bounce needs the
// GPU; host is always possible.
func RequireRoute(s *GPUStack, device int, path Route) error {
	switch path {
	case RouteHost:
		return nil
	case RouteGDS, RouteBounce:
	default:
		return fmt.Errorf("required path %q: want gds, bounce or host", path)
	}
	got, why, err := SelectGPURoute(s, device, path)
	if err != nil {
		return fmt.Errorf("%s unusable on GPU %d: %w", path, device, err)
	}
	if path == RouteGDS {
		if mode, mwhy := s.GDSMode(); mode != cufile.ModeP2PDMA && mode != cufile.ModeNVFS {
			return fmt.Errorf("gds unusable on GPU %d: cuFile in %s mode (%s) (%w)", device, mode, mwhy, cufile.ErrUnavailable)
		}
	}
	if got != path {
		return fmt.Errorf("%s unusable on GPU %d: %s (%w)", path, device, why, cufile.ErrUnavailable)
	}
	return nil
}
