package bench

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRunAlternatesModesAndSummarises(t *testing.T) {
	var order []string
	mk := func(name string, wall time.Duration) Mode {
		return Mode{Name: name, Run: func(context.Context, string, Options) (Sample, error) {
			order = append(order, name)
			return Sample{Bytes: 1 << 30, Wall: wall, CPU: wall / 2, Lat: []time.Duration{wall / 4}}, nil
		}}
	}
	drops := 0
	rep, err := Run(context.Background(), "f", []Mode{mk("a", time.Second), mk("b", 2*time.Second)},
		Options{Runs: 3, Cold: true, Dropper: func(string) (string, error) { drops++; return "cold (test)", nil }})
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b", "a", "b", "a", "b"}, order, "modes alternate within each round")
	require.Equal(t, 6, drops, "cache dropped before every run")
	require.Equal(t, "cold (test)", rep.Cache)
	res := rep.Results
	require.InDelta(t, 1.0, res[0].GiBPerS, 1e-9)
	require.InDelta(t, 0.5, res[1].GiBPerS, 1e-9)
	require.InDelta(t, 0.5, res[0].CPUSecondsPerGiB, 1e-9)
	require.InDelta(t, 250, res[0].P50Ms, 1e-6)
}

func TestRunReportsModeErrors(t *testing.T) {
	bad := Mode{Name: "bad", Run: func(context.Context, string, Options) (Sample, error) { return Sample{}, errors.New("boom") }}
	_, err := Run(context.Background(), "f", []Mode{bad}, Options{Runs: 1})
	require.ErrorContains(t, err, "mode bad, run 1: boom")
}

func TestHostModesReadTheWholeFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(path, make([]byte, 5<<20+3), 0o644))
	for _, m := range HostModes() {
		s, err := m.Run(context.Background(), path, Options{Workers: 2, ChunkSize: 1 << 20})
		require.NoError(t, err, m.Name)
		require.Equal(t, int64(5<<20+3), s.Bytes, m.Name)
		require.NotEmpty(t, s.Lat, m.Name)
	}
}

func TestMedian(t *testing.T) {
	require.Equal(t, 0.0, median(nil))
	require.Equal(t, 2.0, median([]float64{3, 1, 2}))
	require.Equal(t, 2.5, median([]float64{4, 1, 2, 3}))
}

func TestRandomModeReadsBlocks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(path, make([]byte, 1<<20+100), 0o644))
	m := RandomMode()
	require.True(t, m.OnlyByName, "the random mode reads part of the file: it must be asked for")
	for _, tc := range []struct {
		cfg       Options
		reads     int
		blockSize int64
	}{
		{Options{Workers: 4, RandomReads: 100}, 100, DefaultBlockSize},
		{Options{Workers: 2, BlockSize: 64 << 10, RandomReads: 7}, 7, 64 << 10},
		{Options{}, DefaultRandomReads, DefaultBlockSize},
	} {
		s, err := m.Run(context.Background(), path, tc.cfg)
		require.NoError(t, err)
		require.Equal(t, int64(tc.reads)*tc.blockSize, s.Bytes)
		require.Len(t, s.Lat, tc.reads, "one latency per read")
	}
	_, err := m.Run(context.Background(), path, Options{BlockSize: 2 << 20})
	require.ErrorContains(t, err, "has only")
}
