package loader

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// calibrate measures dir's file system with every GPU of the double as it
// is set now and writes the profile to a file of the test's, returning
// the profile written and its path.
func calibrate(t *testing.T, f *fakeGPULibs, dir string) (*RouteProfile, string) {
	t.Helper()
	stack := OpenGPUStack(f.Config())
	defer stack.Close()
	p, err := Calibrate(context.Background(), stack, []string{dir}, WithCalibrateBytes(4<<20), WithCalibrateRounds(3))
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "cache", "routes.json")
	w, err := UpdateRouteProfile(path, p)
	require.NoError(t, err)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "the scratch file is removed")
	return w, path
}

// With the double's routes at set speeds, calibration measures the faster
// one, and the auto policy takes it, citing the figures, their date and
// the profile; a profile measured with other versions is not used.
func TestRouteProfileDecidesAuto(t *testing.T) {
	for _, tc := range []struct {
		name      string
		calibrate []string // the double while measuring
		load      []string // the double while loading, after calibrate's
		opts      []TargetOption
		device    int
		faster    Route
		route     Route
		reason    []string
		cites     bool // the profile's figures and date, not only its path
	}{
		{name: "bounce faster", calibrate: []string{"mode=nvfs", "gds_mibps=48"}, faster: RouteBounce, route: RouteBounce, cites: true,
			reason: []string{"bounce measured faster than gds from ", " to GPU 0, gds ", " GiB/s against bounce ", "gds usable: cuFile in nvfs mode"}},
		{name: "gds faster", calibrate: []string{"mode=nvfs", "h2d_mibps=48"}, faster: RouteGDS, route: RouteGDS, cites: true,
			reason: []string{"gds measured faster than bounce from ", "; cuFile in nvfs mode"}},
		{name: "gds faster in compat mode", calibrate: []string{"mode=compat", "h2d_mibps=48"}, faster: RouteGDS, route: RouteGDS, cites: true,
			reason: []string{"gds measured faster than bounce from ", "although cuFile is in compat mode"}},
		{name: "bounce faster in compat mode", calibrate: []string{"mode=compat", "gds_mibps=48"}, faster: RouteBounce, route: RouteBounce, cites: true,
			reason: []string{"bounce measured faster than gds from ", "; gds refused: cuFile in compat mode"}},
		{name: "libcufile upgraded", calibrate: []string{"mode=nvfs", "gds_mibps=48"}, load: []string{"cufile_version=1170"},
			faster: RouteBounce, route: RouteGDS,
			reason: []string{"cuFile in nvfs mode", ` ignored: measured with libcufile "1160", now "1170"; calibrate again`}},
		{name: "cuFile mode changed", calibrate: []string{"mode=nvfs", "gds_mibps=48"}, load: []string{"mode=p2pdma"},
			faster: RouteBounce, route: RouteGDS, reason: []string{`ignored: measured with cuFile mode "nvfs", now "p2pdma"`}},
		{name: "GPU not measured", calibrate: []string{"mode=nvfs", "gds_mibps=48"}, load: []string{"devices=2"},
			device: 1, faster: RouteBounce, route: RouteGDS, reason: []string{"has no measurement from ", " to GPU 1"}},
		{name: "route insisted on", calibrate: []string{"mode=nvfs", "gds_mibps=48"}, opts: []TargetOption{WithRoute(RouteGDS)},
			faster: RouteBounce, route: RouteGDS, reason: []string{"cuFile in nvfs mode"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := withFakeGPU(t, tc.calibrate...)
			data := t.TempDir()
			p, path := calibrate(t, f, data)
			require.Len(t, p.Pairs, 1)
			m := p.Pairs[0]
			require.Equal(t, tc.faster, m.Faster, "gds %v, bounce %v", m.GDS, m.Bounce)
			require.Empty(t, m.GDS.Error)
			require.Empty(t, m.Bounce.Error)
			require.Equal(t, int64(4<<20), m.Bytes)
			require.WithinDuration(t, time.Now(), m.MeasuredAt, time.Hour)

			for _, c := range tc.load {
				require.NoError(t, f.Do(c))
			}
			target := Target{Kind: TargetAuto, Device: tc.device}
			opts := append([]TargetOption{WithCuFileConfig(f.Config()), WithRouteProfile(path, data)}, tc.opts...)
			l, err := OpenTarget(target, opts...)
			require.NoError(t, err)
			defer l.Close()
			t.Logf("reason: %s", l.Reason())
			require.Equal(t, tc.route, l.Route(), l.Reason())
			for _, s := range tc.reason {
				require.Contains(t, l.Reason(), s)
			}
			if tc.opts != nil { // a route insisted on: no profile read
				require.NotContains(t, l.Reason(), "route profile")
			} else {
				require.Contains(t, l.Reason(), "route profile "+path)
			}
			if tc.cites {
				require.Contains(t, l.Reason(), m.MeasuredAt.Format("2006-01-02 15:04 UTC"), "the date of the figures")
				require.Contains(t, l.Reason(), m.GDS.String())
				require.Contains(t, l.Reason(), m.Bounce.String())
			}
		})
	}
}

// A profile that is absent changes nothing; one that cannot be read, or
// was measured on another host, is not used, and the reason says why.
func TestRouteProfileNotUsed(t *testing.T) {
	f := withFakeGPU(t, "mode=nvfs", "gds_mibps=48")
	data := t.TempDir()
	p, path := calibrate(t, f, data)
	open := func(profile string) *Landing {
		l, err := OpenTarget(Target{Kind: TargetGPU}, WithCuFileConfig(f.Config()), WithRouteProfile(profile, data))
		require.NoError(t, err)
		t.Cleanup(func() { l.Close() })
		return l
	}
	l := open(filepath.Join(t.TempDir(), "absent.json"))
	require.Equal(t, RouteGDS, l.Route())
	require.NotContains(t, l.Reason(), "route profile")

	other := *p
	other.Host = "elsewhere"
	moved := filepath.Join(t.TempDir(), "other-host.json")
	_, err := UpdateRouteProfile(moved, &other)
	require.NoError(t, err)
	l = open(moved)
	require.Equal(t, RouteGDS, l.Route())
	require.Contains(t, l.Reason(), `ignored: measured on host "elsewhere"`)

	require.NoError(t, os.WriteFile(path, []byte("{not json"), 0o644))
	l = open(path)
	require.Equal(t, RouteGDS, l.Route())
	require.Contains(t, l.Reason(), "route profile "+path+" ignored: route profile "+path+": invalid character")
}

// Writing a profile keeps the pairs of the one there that were not
// measured again, when it was measured with the same versions, and drops
// them otherwise.
func TestUpdateRouteProfileMerges(t *testing.T) {
	path := filepath.Join(t.TempDir(), "routes.json")
	a := FileSystem{Mount: "/a", Source: "/dev/a", Type: "ext4", Device: "8:1"}
	b := FileSystem{Mount: "/b", Source: "/dev/b", Type: "xfs", Device: "8:2"}
	stack := StackVersions{CuFile: "1160", GDSMode: "nvfs"}
	first := &RouteProfile{Host: "h", Stack: stack, Pairs: []RoutePair{
		{FileSystem: a, GPU: 0, Faster: RouteGDS}, {FileSystem: b, GPU: 0, Faster: RouteGDS}}}
	_, err := UpdateRouteProfile(path, first)
	require.NoError(t, err)

	again := &RouteProfile{Host: "h", Stack: stack, Pairs: []RoutePair{{FileSystem: a, GPU: 0, Faster: RouteBounce}}}
	got, err := UpdateRouteProfile(path, again)
	require.NoError(t, err)
	read, err := ReadRouteProfile(path)
	require.NoError(t, err)
	require.Equal(t, got, read)
	require.Len(t, read.Pairs, 2)
	require.Equal(t, RouteBounce, read.pair(a, 0).Faster, "measured again")
	require.Equal(t, RouteGDS, read.pair(b, 0).Faster, "kept")
	require.Nil(t, read.pair(b, 1))

	upgraded := &RouteProfile{Host: "h", Stack: StackVersions{CuFile: "1170", GDSMode: "nvfs"}, Pairs: []RoutePair{{FileSystem: a, GPU: 0}}}
	_, err = UpdateRouteProfile(path, upgraded)
	require.NoError(t, err)
	read, err = ReadRouteProfile(path)
	require.NoError(t, err)
	require.Len(t, read.Pairs, 1, "pairs measured with other versions are dropped")
}

func TestFasterNeedsTheMargin(t *testing.T) {
	for _, tc := range []struct {
		gds, bounce RouteFigure
		want        Route
	}{
		{RouteFigure{GiBPerS: 2}, RouteFigure{GiBPerS: 1}, RouteGDS},
		{RouteFigure{GiBPerS: 1}, RouteFigure{GiBPerS: 2}, RouteBounce},
		{RouteFigure{GiBPerS: 1.03}, RouteFigure{GiBPerS: 1}, ""},
		{RouteFigure{GiBPerS: 1}, RouteFigure{GiBPerS: 1.03}, ""},
		{RouteFigure{Error: "x"}, RouteFigure{GiBPerS: 1}, RouteBounce},
		{RouteFigure{GiBPerS: 1}, RouteFigure{Error: "x"}, RouteGDS},
		{RouteFigure{Error: "x"}, RouteFigure{Error: "y"}, ""},
	} {
		require.Equal(t, tc.want, faster(tc.gds, tc.bounce), "%v %v", tc.gds, tc.bounce)
	}
}

func TestCalibrateOptionsRefuseOutOfRange(t *testing.T) {
	for name, o := range map[string]CalibrateOption{
		"bytes too few":   WithCalibrateBytes(MinCalibrateBytes - DefaultAlignment),
		"bytes too many":  WithCalibrateBytes(MaxCalibrateBytes + DefaultAlignment),
		"bytes unaligned": WithCalibrateBytes(MinCalibrateBytes + 1),
		"rounds 0":        WithCalibrateRounds(0),
		"rounds too many": WithCalibrateRounds(MaxCalibrateRounds + 1),
	} {
		_, err := Calibrate(context.Background(), &GPUStack{}, []string{"."}, o)
		require.Error(t, err, name)
	}
}

// Calibrate reads a file it is given (no scratch file), only as much of
// it as asked, and measures a file system once however many paths lie on
// it.
func TestCalibrateReadsAGivenFile(t *testing.T) {
	f := withFakeGPU(t, "mode=nvfs")
	dir := t.TempDir()
	file := filepath.Join(dir, "sample.bin")
	require.NoError(t, os.WriteFile(file, make([]byte, 3<<20+5), 0o644))
	stack := OpenGPUStack(f.Config())
	defer stack.Close()
	p, err := Calibrate(context.Background(), stack, []string{file, dir}, WithCalibrateBytes(2<<20), WithCalibrateRounds(1))
	require.NoError(t, err)
	require.Len(t, p.Pairs, 1)
	require.Equal(t, file, p.Pairs[0].Sample)
	require.Equal(t, int64(2<<20), p.Pairs[0].Bytes)
	require.Positive(t, p.Pairs[0].GDS.GiBPerS)
	require.Positive(t, p.Pairs[0].Bounce.GiBPerS)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no scratch file")

	_, err = Calibrate(context.Background(), stack, []string{filepath.Join(dir, "absent")})
	require.ErrorContains(t, err, "absent")
}
