package iterator

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A state saved at the end of a run is reported as finished for a run of
// as many epochs, and resumes into a run of more; options that fix the
// order and differ from the state's are listed.
func TestCheckResume(t *testing.T) {
	ds := makeShards(t, []int{4, 3})
	run := Options{Seed: 3, Shuffle: true, Epochs: 3}
	_, end := collect(t, ds, run, nil, 0)
	_, mid := collect(t, ds, run, nil, 5)
	require.EqualValues(t, 3, end.Epoch, "state after 3 epochs: %+v", end)
	require.Zero(t, end.Consumed, "state after 3 epochs: %+v", end)
	tests := []struct {
		name     string
		st       State
		o        Options
		finished bool
		options  []string
	}{
		{"end of a 3-epoch run, resumed with 3", end, run, true, nil},
		{"end of the run, resumed with the default of 1", end, Options{Seed: 3, Shuffle: true}, true, nil},
		{"end of the run, resumed with 4", end, Options{Seed: 3, Shuffle: true, Epochs: 4}, false, nil},
		{"mid-run, same options", mid, run, false, nil},
		{"another seed", mid, Options{Seed: 9, Shuffle: true, Epochs: 3}, false, []string{"Seed"}},
		{"another world size, partitions by default", mid, Options{Seed: 3, Shuffle: true, Epochs: 3, WorldSize: 2}, false, nil},
		{"other partitions, shuffle and window", mid, Options{Seed: 3, Partitions: 4, ShuffleBytes: 1 << 20, DropRemainder: true, Epochs: 3}, false,
			[]string{"Partitions", "Shuffle", "ShuffleBytes", "DropRemainder"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mm, err := CheckResume(tc.st, tc.o)
			require.Equal(t, errors.Is(err, ErrRunFinished), tc.finished, "CheckResume: %v, want ErrRunFinished %v", err, tc.finished)
			require.False(t, !tc.finished && err != nil, err)
			var got []string
			for _, m := range mm {
				got = append(got, m.Option)
			}
			require.Equal(t, tc.options, got, "mismatches %v, want %v", mm, tc.options)
		})
	}
	// What CheckResume lets through restores and goes on: the end of the
	// run yields the fourth epoch.
	samples, st := collect(t, ds, Options{Seed: 3, Shuffle: true, Epochs: 4}, &end, 0)
	require.Len(t, samples, 7, "resumed at the end of 3 epochs into 4: %d samples, state %+v; want 7, epoch 4", len(samples), st)
	require.EqualValues(t, 4, st.Epoch, "resumed at the end of 3 epochs into 4: %d samples, state %+v; want 7, epoch 4", len(samples), st)
}

func TestCheckStateFile(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, CheckStateFile(filepath.Join(dir, "state.json")))
	err := CheckStateFile(filepath.Join(dir, "missing", "state.json"))
	require.Error(t, err, "a state file in a missing directory passed the check")
}
