package vfs

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestForEach(t *testing.T) {
	for _, tc := range []struct {
		name    string
		n       int
		failAt  []int // indices whose call fails
		wantErr string
	}{
		{"none", 0, nil, ""},
		{"few, serial", 5, nil, ""},
		{"many, parallel", 1000, nil, ""},
		{"few, one fails", 5, []int{3}, "call 3"},
		{"many, the lowest failure wins", 1000, []int{700, 200, 999}, "call 200"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen := make([]atomic.Int32, tc.n)
			var calls atomic.Int64
			err := forEach(context.Background(), tc.n, func(i int) error {
				calls.Add(1)
				seen[i].Add(1)
				for _, f := range tc.failAt {
					if i == f {
						return fmt.Errorf("call %d", i)
					}
				}
				return nil
			})
			if tc.wantErr == "" {
				require.NoError(t, err)
				for i := range seen {
					require.EqualValues(t, 1, seen[i].Load(), "call %d made %d times", i, seen[i].Load())
				}
				return
			}
			require.EqualError(t, err, tc.wantErr)
			for i := range seen {
				require.LessOrEqual(t, seen[i].Load(), int32(1), "call %d made twice", i)
			}
			if tc.n >= 2*metadataWorkers {
				// Calls after the first failure stop: at most the ones in
				// flight then, one a worker, run on.
				require.Less(t, calls.Load(), int64(tc.n), "every call was made after a failure")
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := forEach(ctx, 100, func(int) error { return nil })
	require.True(t, errors.Is(err, context.Canceled), "a cancelled context: %v", err)
}
