package rdmafs

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lockedBuffer is a bytes.Buffer safe for the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A real client with a wrong or missing token hangs up after the challenge
// (it checks the server's proof first): the server must still log the
// failed login with the peer's address, rate-limited, and count it.
func TestFailedLoginsLoggedAndCounted(t *testing.T) {
	var logs lockedBuffer
	ts := startServer(t, serverConfig{Logger: slog.New(slog.NewTextHandler(&logs, nil))}, nil)
	const attempts = 12
	for i := range attempts {
		opts := []Option{WithConnections(1)}
		if i%2 == 0 {
			opts = append(opts, WithToken([]byte("some-other-token-0123456789")))
		}
		c, err := Dial(context.Background(), ts.addr, opts...)
		if err == nil {
			c.Close()
		}
		require.Error(t, err, "attempt %d: dial with a wrong token succeeded", i)
		require.ErrorIs(t, err, ErrAuth, "attempt %d: %v, want ErrAuth", i, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for ts.srv.metrics.authFail.Load() < attempts && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	n := ts.srv.metrics.authFail.Load()
	require.EqualValues(t, attempts, n, "rdmafs_auth_failures_total = %d, want %d", n, attempts)
	lines := strings.Count(logs.String(), `msg="rdmafs login failed"`)
	assert.EqualValues(t, 10, lines, "%d failed-login lines logged, want 10 (the per-minute burst):\n%s", lines, logs.String())
	for _, want := range []string{"remote=127.0.0.1:", "its token differs from the server's, or it has none"} {
		assert.Contains(t, logs.String(), want, "log lacks %q:\n%s", want, logs.String())
	}
}

func TestLogLimiter(t *testing.T) {
	t0 := time.Unix(1000, 0)
	l := logLimiter{interval: time.Minute, burst: 2}
	steps := []struct {
		at             time.Duration
		ok             bool
		wantSuppressed int
	}{
		{0, true, 0},
		{time.Second, true, 0},
		{2 * time.Second, false, 0},
		{3 * time.Second, false, 0},
		{61 * time.Second, true, 2}, // a new window says what was held back
		{62 * time.Second, true, 0},
		{63 * time.Second, false, 0},
	}
	for i, s := range steps {
		ok, sup := l.allow(t0.Add(s.at))
		assert.Equal(t, s.ok, ok, "step %d (+%v): allow = %v, %d; want %v, %d", i, s.at, ok, sup, s.ok, s.wantSuppressed)
		assert.Equal(t, s.wantSuppressed, sup, "step %d (+%v): allow = %v, %d; want %v, %d", i, s.at, ok, sup, s.ok, s.wantSuppressed)
	}
}
