package stats

import (
	"slices"
	"time"
)

// Percentiles returns the 50th and 99th percentile of lat (nearest rank);
// it sorts lat in place.
func Percentiles(lat []time.Duration) (p50, p99 time.Duration) {
	if len(lat) == 0 {
		return 0, 0
	}
	slices.Sort(lat)
	rank := func(q float64) time.Duration {
		i := int(q*float64(len(lat))+0.999999) - 1
		return lat[max(0, min(i, len(lat)-1))]
	}
	return rank(0.50), rank(0.99)
}
