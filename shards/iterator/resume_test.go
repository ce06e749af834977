package iterator

import (
	"errors"
	"path/filepath"
	"reflect"
	"testing"
)

// A state saved at the end of a run is reported as finished for a run of
// as many epochs, and resumes into a run of more; options that fix the
// order and differ from the state's are listed.
func TestCheckResume(t *testing.T) {
	ds := makeShards(t, []int{4, 3})
	run := Options{Seed: 3, Shuffle: true, Epochs: 3}
	_, end := collect(t, ds, run, nil, 0)
	_, mid := collect(t, ds, run, nil, 5)
	if end.Epoch != 3 || end.Consumed != 0 {
		t.Fatalf("state after 3 epochs: %+v", end)
	}
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
			if tc.finished != errors.Is(err, ErrRunFinished) {
				t.Fatalf("CheckResume: %v, want ErrRunFinished %v", err, tc.finished)
			}
			if !tc.finished && err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range mm {
				got = append(got, m.Option)
			}
			if !reflect.DeepEqual(got, tc.options) {
				t.Fatalf("mismatches %v, want %v", mm, tc.options)
			}
		})
	}
	// What CheckResume lets through restores and goes on: the end of the
	// run yields the fourth epoch.
	samples, st := collect(t, ds, Options{Seed: 3, Shuffle: true, Epochs: 4}, &end, 0)
	if len(samples) != 7 || st.Epoch != 4 {
		t.Fatalf("resumed at the end of 3 epochs into 4: %d samples, state %+v; want 7, epoch 4", len(samples), st)
	}
}

func TestCheckStateFile(t *testing.T) {
	dir := t.TempDir()
	if err := CheckStateFile(filepath.Join(dir, "state.json")); err != nil {
		t.Fatal(err)
	}
	if err := CheckStateFile(filepath.Join(dir, "missing", "state.json")); err == nil {
		t.Fatal("a state file in a missing directory passed the check")
	}
}
