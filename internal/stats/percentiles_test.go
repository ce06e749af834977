package stats

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPercentiles(t *testing.T) {
	for _, tc := range []struct {
		in       []time.Duration
		p50, p99 time.Duration
	}{
		{nil, 0, 0},
		{[]time.Duration{5}, 5, 5},
		{[]time.Duration{4, 1, 3, 2}, 2, 4},
		{func() []time.Duration {
			var d []time.Duration
			for i := 100; i >= 1; i-- {
				d = append(d, time.Duration(i))
			}
			return d
		}(), 50, 99},
	} {
		p50, p99 := Percentiles(tc.in)
		require.Equal(t, tc.p50, p50)
		require.Equal(t, tc.p99, p99)
	}
}
