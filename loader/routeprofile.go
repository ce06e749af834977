package loader

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gdsload/gdsload/cufile"
	"github.com/gdsload/gdsload/internal/buildinfo"
	"github.com/gdsload/gdsload/internal/durable"
)

// RouteProfileEnv names the environment variable that moves the route
// profile (DefaultRouteProfilePath): a file, or "off" for none.
const RouteProfileEnv = "GDSLOAD_ROUTE_PROFILE"

// routeProfileFormat changes when the profile's layout changes; a profile
// of another format is ignored.
const routeProfileFormat = 1

// RouteMargin is how much faster one route must have measured for the
// auto policy to prefer it over the other: within it the two are taken
// as equal (noise) and the policy's own choice stands.
const RouteMargin = 0.05

// DefaultRouteProfilePath is the route profile `gdsload doctor
// --calibrate` writes and `gdsload load` reads (WithRouteProfile):
// $GDSLOAD_ROUTE_PROFILE when set ("off": none, ""), else
// gdsload/routes-HOST.json in the user's cache directory
// (os.UserCacheDir), one file per node so that a home folder shared by
// several nodes keeps each node's figures apart; "" where there is none.
func DefaultRouteProfilePath() string {
	if p, ok := os.LookupEnv(RouteProfileEnv); ok {
		if p == "off" {
			return ""
		}
		return p
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return filepath.Join(d, "gdsload", "routes-"+host+".json")
}

// StackVersions are the versions of what a route measurement depends
// on: the NVIDIA kernel driver, the CUDA driver and runtime, libcufile,
// nvidia-fs, cuFile's mode and gdsload itself. A profile measured with
// other versions is ignored: an upgrade can change which route is
// faster.
type StackVersions struct {
	NVIDIADriver string      `json:"nvidia_driver"` // /proc/driver/nvidia/version, first line
	CUDADriver   string      `json:"cuda_driver"`
	CUDARuntime  string      `json:"cuda_runtime"`
	CuFile       string      `json:"cufile"`
	NVIDIAFS     string      `json:"nvidia_fs"` // from cuFile's driver properties
	GDSMode      cufile.Mode `json:"gds_mode"`
	Gdsload      string      `json:"gdsload"`
}

// Versions reports the versions of the stack's libraries and drivers, as
// a route profile records them. It opens the cuFile driver if it can.
func (s *GPUStack) Versions() StackVersions {
	var v StackVersions
	v.NVIDIADriver = cufile.ProbePlatform(s.cfg).NVIDIADriver
	if s.Runtime != nil {
		if n, err := s.Runtime.DriverVersion(); err == nil && n > 0 {
			v.CUDADriver = fmt.Sprintf("%d.%d", n/1000, (n%1000)/10)
		}
		v.CUDARuntime = s.Runtime.Library().Version
	}
	if s.CuFile != nil {
		v.CuFile = s.CuFile.Library().Version
	}
	v.GDSMode, _ = s.GDSMode()
	if drv, err := s.Driver(); err == nil {
		if p, err := drv.Properties(); err == nil && (p.NVFSMajor != 0 || p.NVFSMinor != 0) {
			v.NVIDIAFS = fmt.Sprintf("%d.%d", p.NVFSMajor, p.NVFSMinor)
		}
	}
	b := buildinfo.Read()
	v.Gdsload = strings.TrimSpace(b.Version + " " + b.Revision)
	return v
}

// differs says how now differs from v ("libcufile 1160, now 1170"), or
// "" when they are the same.
func (v StackVersions) differs(now StackVersions) string {
	for _, f := range []struct{ name, was, is string }{
		{"NVIDIA driver", v.NVIDIADriver, now.NVIDIADriver},
		{"CUDA driver", v.CUDADriver, now.CUDADriver},
		{"CUDA runtime", v.CUDARuntime, now.CUDARuntime},
		{"libcufile", v.CuFile, now.CuFile},
		{"cuFile mode", string(v.GDSMode), string(now.GDSMode)},
		{"nvidia-fs", v.NVIDIAFS, now.NVIDIAFS},
		{"gdsload", v.Gdsload, now.Gdsload},
	} {
		if f.was != f.is {
			return fmt.Sprintf("%s %s, now %s", f.name, quotedOrNone(f.was), quotedOrNone(f.is))
		}
	}
	return ""
}

func quotedOrNone(s string) string {
	if s == "" {
		return "none"
	}
	return fmt.Sprintf("%q", s)
}

// RouteProfile is what calibrating a node measured (Calibrate): for each
// pair of a file system and a GPU, how fast gds and bounce read into
// that GPU, with the versions of the stack measured. The auto policy
// takes the faster route of the pair a load reads from and lands on
// (WithRouteProfile). Its JSON form is the profile file.
type RouteProfile struct {
	Format int           `json:"format"`
	Host   string        `json:"host"`
	Stack  StackVersions `json:"stack"`
	Pairs  []RoutePair   `json:"pairs"`
}

// RoutePair is one measured pair of a file system and a GPU.
type RoutePair struct {
	FileSystem FileSystem `json:"file_system"`
	GPU        int        `json:"gpu"`
	// Sample is the file read; Bytes how much of it each read moved,
	// Rounds how many times each route read it (alternating).
	Sample string      `json:"sample"`
	Bytes  int64       `json:"bytes"`
	Rounds int         `json:"rounds"`
	GDS    RouteFigure `json:"gds"`
	Bounce RouteFigure `json:"bounce"`
	// Faster is the route that measured faster by more than RouteMargin
	// (or the only one that worked), "" when they are within it or
	// neither worked.
	Faster     Route     `json:"faster"`
	MeasuredAt time.Time `json:"measured_at"`
}

// RouteFigure is one route's measurement: the median bandwidth of its rounds,
// or why it failed.
type RouteFigure struct {
	GiBPerS float64 `json:"gib_per_s"`
	Error   string  `json:"error,omitempty"`
}

// faster is the route of p that measured faster by more than
// RouteMargin, or the only one that worked; "" for neither.
func faster(gds, bounce RouteFigure) Route {
	switch {
	case gds.Error != "" && bounce.Error != "":
		return ""
	case gds.Error != "":
		return RouteBounce
	case bounce.Error != "":
		return RouteGDS
	case gds.GiBPerS > bounce.GiBPerS*(1+RouteMargin):
		return RouteGDS
	case bounce.GiBPerS > gds.GiBPerS*(1+RouteMargin):
		return RouteBounce
	}
	return ""
}

// ReadRouteProfile reads the profile at path. A missing file gives an
// error matching fs.ErrNotExist.
func ReadRouteProfile(path string) (*RouteProfile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var p RouteProfile
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("route profile %s: %w (delete it, or calibrate again)", path, err)
	}
	if p.Format != routeProfileFormat {
		return nil, fmt.Errorf("route profile %s: format %d, want %d (calibrate again)", path, p.Format, routeProfileFormat)
	}
	return &p, nil
}

// UpdateRouteProfile writes p to path atomically (durable.WriteFile),
// keeping the pairs of the profile already there that p did not measure
// again, when that profile was measured on this host with the same
// versions; other profiles are replaced. It returns what it wrote.
func UpdateRouteProfile(path string, p *RouteProfile) (*RouteProfile, error) {
	out := *p
	out.Format = routeProfileFormat
	out.Pairs = append([]RoutePair(nil), p.Pairs...)
	if old, err := ReadRouteProfile(path); err == nil && old.Host == p.Host && old.Stack.differs(p.Stack) == "" {
		for _, o := range old.Pairs {
			again := false
			for _, n := range p.Pairs {
				again = again || (n.GPU == o.GPU && n.FileSystem.Same(o.FileSystem))
			}
			if !again {
				out.Pairs = append(out.Pairs, o)
			}
		}
	}
	b, err := json.MarshalIndent(&out, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("route profile folder: %w", err)
	}
	if err := durable.WriteFile(path, append(b, '\n')); err != nil {
		return nil, fmt.Errorf("writing route profile %s: %w", path, err)
	}
	return &out, nil
}

// pair returns p's measurement of fsys and GPU device, or nil.
func (p *RouteProfile) pair(fsys FileSystem, device int) *RoutePair {
	for i := range p.Pairs {
		if p.Pairs[i].GPU == device && p.Pairs[i].FileSystem.Same(fsys) {
			return &p.Pairs[i]
		}
	}
	return nil
}

// adviseRoute is what the profile at path says about a load from the file
// system holding dataPath to GPU device on stack, where the auto policy
// chose route for reason. It returns the route to take and the reason to
// give: a measured pair's faster route, with its figures and their date;
// otherwise the policy's choice, with why the profile did not decide
// (none when there is no profile file).
func adviseRoute(path, dataPath string, stack *GPUStack, device int, route Route, reason string) (Route, string) {
	if path == "" || dataPath == "" {
		return route, reason
	}
	switch mode, _ := stack.GDSMode(); mode {
	case cufile.ModeP2PDMA, cufile.ModeNVFS, cufile.ModeCompat:
	default:
		return route, reason // gds cannot run: nothing to choose
	}
	note := func(s string) (Route, string) { return route, reason + "; route profile " + path + " " + s }
	p, err := ReadRouteProfile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return route, reason
	}
	if err != nil {
		return note("ignored: " + err.Error())
	}
	host, _ := os.Hostname()
	if p.Host != host {
		return note(fmt.Sprintf("ignored: measured on host %q, this is %q", p.Host, host))
	}
	if d := p.Stack.differs(stack.Versions()); d != "" {
		return note("ignored: measured with " + d + "; calibrate again")
	}
	fsys, err := FileSystemOf(dataPath)
	if err != nil {
		return note("not used: " + err.Error())
	}
	m := p.pair(fsys, device)
	if m == nil {
		return note(fmt.Sprintf("has no measurement from %s to GPU %d", fsys, device))
	}
	when := m.MeasuredAt.UTC().Format("2006-01-02 15:04 MST")
	cite := fmt.Sprintf("from %s to GPU %d, gds %s against bounce %s on %s (route profile %s)",
		fsys, device, m.GDS, m.Bounce, when, path)
	switch m.Faster {
	case RouteBounce:
		if route == RouteBounce {
			return RouteBounce, fmt.Sprintf("bounce measured faster than gds %s; %s", cite, reason)
		}
		return RouteBounce, fmt.Sprintf("bounce measured faster than gds %s; gds usable: %s", cite, reason)
	case RouteGDS:
		if route == RouteGDS {
			return RouteGDS, fmt.Sprintf("gds measured faster than bounce %s; %s", cite, reason)
		}
		mode, why := stack.GDSMode()
		return RouteGDS, fmt.Sprintf("gds measured faster than bounce %s, although cuFile is in %s mode (%s)", cite, mode, why)
	}
	return route, fmt.Sprintf("%s; gds and bounce measured within %.0f%% of each other %s", reason, RouteMargin*100, cite)
}

// String writes f for a reason: "2.1 GiB/s", or "failed (why)".
func (f RouteFigure) String() string {
	if f.Error != "" {
		return "failed (" + f.Error + ")"
	}
	return fmt.Sprintf("%.3g GiB/s", f.GiBPerS)
}
