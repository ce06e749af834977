package progress

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestProgressOnlyOnTerminals(t *testing.T) {
	var buf bytes.Buffer
	require.Nil(t, Start(&buf, "load", 10), "no bar into a buffer")
	f, err := os.CreateTemp(t.TempDir(), "out")
	require.NoError(t, err)
	defer f.Close()
	require.Nil(t, Start(f, "load", 10), "no bar into a regular file")
	var p *Bar // a nil bar is valid and silent
	p.Add(5)
	p.SetTotal(7)
	p.Stop()
}

func TestProgressDraw(t *testing.T) {
	var buf bytes.Buffer
	p := &Bar{w: &buf, label: "load", start: time.Now().Add(-2 * time.Second)}
	p.total.Store(4 << 30)
	p.Add(1 << 30)
	p.draw()
	line := buf.String()
	require.True(t, strings.HasPrefix(line, "\rload ["), line)
	require.Contains(t, line, " 25.0% ")
	require.Contains(t, line, "1.0 GiB/4.0 GiB")
	require.Contains(t, line, "ETA 6s", "3 GiB left at 0.5 GiB/s")
}
