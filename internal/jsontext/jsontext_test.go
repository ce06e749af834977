package jsontext

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "shard-000001.tar.zst", `quote " backslash \ /`, "<&>", "\x00\x1f\x7f", "héllo \u2028", "bad \xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		got := AppendString([]byte("x"), s)
		require.Equal(t, "x"+string(want), string(got), "AppendString(%q) = %q, want %q", s, got[1:], want)
	})
}
