package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gdsload/gdsload/loader"
)

// calibrateJSON is what doctor --calibrate --json prints.
type calibrateJSON struct {
	Profile string `json:"profile"`
	loader.RouteProfile
}

// With the double set so that bounce is faster than gds, doctor
// --calibrate and then load --to auto takes bounce, and the reason cites
// the profile's figures and their date; the other way round it takes gds;
// a profile measured with another libcufile is ignored, and the reason
// says so. doctor PATH says what load PATH does.
func TestCalibrateThenLoadAuto(t *testing.T) {
	ctl := useFakeCUDA(t)
	for _, tc := range []struct {
		name         string
		calibrate    []string // the double while measuring
		load         []string // then, while loading
		faster, path string
		reason       []string
	}{
		{name: "bounce faster", calibrate: []string{"mode=nvfs", "gds_mibps=48"}, faster: "bounce", path: "bounce",
			reason: []string{"bounce measured faster than gds from ", " to GPU 0, gds ", "gds usable: cuFile in nvfs mode"}},
		{name: "gds faster", calibrate: []string{"mode=nvfs", "h2d_mibps=48"}, faster: "gds", path: "gds",
			reason: []string{"gds measured faster than bounce from ", " to GPU 0, gds "}},
		{name: "libcufile upgraded", calibrate: []string{"mode=nvfs", "gds_mibps=48"}, load: []string{"cufile_version=1170"},
			faster: "bounce", path: "gds",
			reason: []string{"cuFile in nvfs mode", ` ignored: measured with libcufile "1160", now "1170"; calibrate again`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			profile := filepath.Join(t.TempDir(), "cache", "routes.json")
			t.Setenv(loader.RouteProfileEnv, profile)
			require.NoError(t, ctl.Do("reset"))
			for _, c := range tc.calibrate {
				require.NoError(t, ctl.Do(c))
			}
			data := t.TempDir()
			file, sum := writeFile(t, data, "shard.bin", 6<<20+123)

			out, stderr, code := run(t, "doctor", "--calibrate", "--calibrate-size", "4MiB", "--json", data)
			require.Equal(t, 0, code, stderr)
			var cal calibrateJSON
			require.NoError(t, json.Unmarshal([]byte(out), &cal), out)
			require.Equal(t, profile, cal.Profile)
			require.Len(t, cal.Pairs, 1)
			m := cal.Pairs[0]
			require.Equal(t, tc.faster, string(m.Faster), "gds %v, bounce %v", m.GDS, m.Bounce)
			written, err := loader.ReadRouteProfile(profile)
			require.NoError(t, err)
			require.Equal(t, cal.RouteProfile, *written, "the profile printed is the one written")
			require.Equal(t, "1160", written.Stack.CuFile)

			for _, c := range tc.load {
				require.NoError(t, ctl.Do(c))
			}
			out, stderr, code = run(t, "load", "--to", "auto", "--json", "--checksum", "sha256", file)
			require.Equal(t, 0, code, stderr)
			var res loadJSON
			require.NoError(t, json.Unmarshal([]byte(out), &res))
			require.Equal(t, tc.path, res.Path, res.Reason)
			require.Equal(t, sum, res.Files[0].SHA256)
			require.Contains(t, res.Reason, "route profile "+profile)
			for _, s := range tc.reason {
				require.Contains(t, res.Reason, s)
			}
			if len(tc.load) == 0 {
				require.Contains(t, res.Reason, m.MeasuredAt.UTC().Format("2006-01-02 15:04 UTC"), "the figures' date")
				require.Contains(t, res.Reason, "gds "+m.GDS.String()+" against bounce "+m.Bounce.String())
			}
			r := doctorJSON(t, file)
			require.Equal(t, tc.path, r.GPULoad.Path, "doctor says the route load takes")
			require.Equal(t, res.Reason, r.GPULoad.Reason)
		})
	}
}

func TestCalibrateHumanOutputAndUsage(t *testing.T) {
	ctl := useFakeCUDA(t)
	require.NoError(t, ctl.Do("mode=nvfs"))
	profile := filepath.Join(t.TempDir(), "routes.json")
	t.Setenv(loader.RouteProfileEnv, profile)
	data := t.TempDir()
	out, stderr, code := run(t, "doctor", "--calibrate", "--calibrate-size", "1MiB", data)
	require.Equal(t, 0, code, stderr)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3, out)
	require.Equal(t, "route profile  "+profile, lines[0])
	require.Regexp(t, `^file system +GPU +gds +bounce +faster +measured$`, lines[1])
	require.Regexp(t, `^\S+ \S+ \(\S+\) +0 +[0-9.]+ GiB/s +[0-9.]+ GiB/s +\S.* +\d{4}-\d\d-\d\d \d\d:\d\d UTC$`, lines[2])

	for _, args := range [][]string{
		{"doctor", "--calibrate", "--calibrate-size", "1000", data},
		{"doctor", "--calibrate", "--calibrate-size", "8TiB", data},
		{"doctor", "--calibrate-size", "4MiB", data},
		{"doctor", data, data},
		{"doctor", "--calibrate", "--require", "gds", data},
	} {
		_, stderr, code := run(t, args...)
		require.Equal(t, 2, code, "%v: %s", args, stderr)
	}
	t.Setenv(loader.RouteProfileEnv, "off")
	_, stderr, code = run(t, "doctor", "--calibrate", data)
	require.Equal(t, 1, code)
	require.Contains(t, stderr, loader.RouteProfileEnv)
}
