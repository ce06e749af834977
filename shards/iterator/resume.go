package iterator

import (
	"errors"
	"fmt"
	"strconv"
)

// ErrRunFinished reports a State saved at the end of a run: an iterator of
// no more epochs than it has done, restored to it, yields no sample.
var ErrRunFinished = errors.New("the state is at the end of the run")

// Mismatch is an option fixing the order whose value in Options differs
// from the State's. Restore adopts the State's value, so that a resumed
// run continues the order it started: a caller that set the option on
// purpose should hear of it.
type Mismatch struct {
	// Option is the Options field: Seed, Partitions, Shuffle,
	// ShuffleBytes or DropRemainder.
	Option string
	// State and Options are the two values, as Go prints them.
	State, Options string
}

func (m Mismatch) String() string {
	return fmt.Sprintf("%s %s differs from the state's %s", m.Option, m.Options, m.State)
}

// CheckResume compares st with the options of the iterator it is to be
// restored into, before any data is read. It returns an error wrapping
// ErrRunFinished when st is at or after the end of o.Epochs epochs
// (default 1), where the restored iterator would return io.EOF at once,
// and lists the options of the order that differ from st's (Restore
// adopts st's). Partitions 0 (the default, the world size) is not
// compared: a run resumes at another world size with the partitions it
// started with.
func CheckResume(st State, o Options) ([]Mismatch, error) {
	epochs := o.Epochs
	if epochs == 0 {
		epochs = 1
	}
	if st.Epoch >= epochs {
		return nil, fmt.Errorf("%w: %d epochs done of %d; an iterator of more epochs goes on from it",
			ErrRunFinished, st.Epoch, epochs)
	}
	var out []Mismatch
	add := func(option, state, opt string) {
		if state != opt {
			out = append(out, Mismatch{Option: option, State: state, Options: opt})
		}
	}
	add("Seed", strconv.FormatUint(st.Seed, 10), strconv.FormatUint(o.Seed, 10))
	if o.Partitions != 0 {
		add("Partitions", strconv.Itoa(st.Partitions), strconv.Itoa(o.Partitions))
	}
	add("Shuffle", strconv.FormatBool(st.Shuffle), strconv.FormatBool(o.Shuffle))
	add("ShuffleBytes", strconv.FormatInt(st.ShuffleBytes, 10), strconv.FormatInt(o.ShuffleBytes, 10))
	add("DropRemainder", strconv.FormatBool(st.DropRemainder), strconv.FormatBool(o.DropRemainder))
	return out, nil
}
