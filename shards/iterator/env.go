package iterator

import (
	"fmt"
	"os"
	"strconv"
)

// Placement is where this process sits in a distributed job.
type Placement struct {
	Rank, WorldSize, LocalRank int
}

// FromEnv reads RANK, WORLD_SIZE and LOCAL_RANK as torchrun sets them;
// unset variables default to rank 0 of a world of 1.
func FromEnv() (Placement, error) {
	return placementFrom(os.LookupEnv)
}

func placementFrom(lookup func(string) (string, bool)) (Placement, error) {
	p := Placement{WorldSize: 1}
	for _, v := range []struct {
		name string
		dst  *int
		min  int
	}{{"RANK", &p.Rank, 0}, {"WORLD_SIZE", &p.WorldSize, 1}, {"LOCAL_RANK", &p.LocalRank, 0}} {
		s, ok := lookup(v.name)
		if !ok || s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < v.min {
			return Placement{}, fmt.Errorf("environment %s=%q is not an integer >= %d", v.name, s, v.min)
		}
		*v.dst = n
	}
	if p.Rank >= p.WorldSize {
		return Placement{}, fmt.Errorf("RANK %d is not below WORLD_SIZE %d", p.Rank, p.WorldSize)
	}
	return p, nil
}

// Validate checks a placement given explicitly (FromEnv's results already
// hold): a world size of at least 1 and at most MaxPartitions, and
// 0 <= Rank < WorldSize. Unlike Options, whose zero WorldSize means 1, a
// placement states the world size, so 0 is an error here.
func (p Placement) Validate() error {
	switch {
	case p.WorldSize < 1 || p.WorldSize > MaxPartitions:
		return fmt.Errorf("world size %d: want 1 to %d", p.WorldSize, MaxPartitions)
	case p.Rank < 0 || p.Rank >= p.WorldSize:
		return fmt.Errorf("rank %d outside world size %d: want 0 to %d", p.Rank, p.WorldSize, p.WorldSize-1)
	case p.LocalRank < 0:
		return fmt.Errorf("local rank %d is negative", p.LocalRank)
	}
	return nil
}
