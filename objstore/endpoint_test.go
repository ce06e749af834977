package objstore_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gdsload/gdsload/objstore"
)

// closedPort is an endpoint where nothing listens: connections are refused.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	endpoint := "http://" + l.Addr().String()
	require.NoError(t, l.Close())
	return endpoint
}

// A wrong endpoint (a name that does not resolve, a port where nothing
// listens) fails the first request at once, naming the endpoint, instead
// of retrying it until the deadline: the context's 10 s would end a retry
// of a minute first.
func TestFirstRequestCannotConnect(t *testing.T) {
	for _, tc := range []struct{ name, endpoint string }{
		{"refused", closedPort(t)},
		{"dns", "http://minio.invalid:9000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := client(t, tc.endpoint, objstore.WithRetryDeadline(time.Minute))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := cl.Stat(ctx, "bucket", "key")
			require.ErrorIs(t, err, objstore.ErrUnavailable)
			assert.NotErrorIs(t, err, context.DeadlineExceeded)
			assert.NotErrorIs(t, err, objstore.ErrRetryDeadline)
			assert.ErrorContains(t, err, tc.endpoint)
			assert.ErrorContains(t, err, "cannot reach the store")
		})
	}
}

// headServer answers every HEAD as an object of 4 bytes, as S3 does.
func headServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "4")
		w.Header().Set("ETag", `"0123456789abcdef0123456789abcdef"`)
		w.Header().Set("Last-Modified", time.Unix(0, 0).UTC().Format(http.TimeFormat))
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// Once the store has answered, a refused connection is an outage and is
// retried until the retry deadline (an option, or GDSLOAD_S3_DEADLINE),
// which the error names; a context ends the retries at once.
func TestRetriesAfterAResponse(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  string
		opts []objstore.Option
		want string
	}{
		{"option", "", []objstore.Option{objstore.WithRetryDeadline(300 * time.Millisecond)}, "now 300ms"},
		{"environment", "250ms", nil, "now 250ms"},
		{"option over environment", "1h", []objstore.Option{objstore.WithRetryDeadline(200 * time.Millisecond)}, "now 200ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(objstore.DeadlineEnv, tc.env)
			srv := headServer(t)
			cl := client(t, srv.URL, tc.opts...)
			info, err := cl.Stat(context.Background(), "bucket", "key")
			require.NoError(t, err)
			require.EqualValues(t, 4, info.Size)
			srv.Close() // connections are refused from now on
			_, err = cl.Stat(context.Background(), "bucket", "key")
			require.ErrorIs(t, err, objstore.ErrRetryDeadline)
			require.ErrorIs(t, err, objstore.ErrUnavailable)
			assert.ErrorContains(t, err, "gave up after")
			assert.ErrorContains(t, err, tc.want)
			assert.ErrorContains(t, err, objstore.DeadlineEnv)
		})
	}
	srv := headServer(t)
	cl := client(t, srv.URL, objstore.WithRetryDeadline(time.Hour))
	_, err := cl.Stat(context.Background(), "bucket", "key")
	require.NoError(t, err)
	srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = cl.Stat(ctx, "bucket", "key")
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestParseDeadline(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"90s", 90 * time.Second, true},
		{"2m", 2 * time.Minute, true},
		{"45", 45 * time.Second, true},
		{"0.5", 500 * time.Millisecond, true},
		{"0", 0, true},
		{"-1s", 0, false},
		{"-3", 0, false},
		{"soon", 0, false},
		{"NaN", 0, false},
		{"1e300", 0, false},
	} {
		d, err := objstore.ParseDeadline(tc.in)
		if !tc.ok {
			assert.Error(t, err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, d, tc.in)
	}
	t.Setenv(objstore.DeadlineEnv, "soon")
	_, err := objstore.New(context.Background(), objstore.WithEndpoint("http://127.0.0.1:1"))
	require.Error(t, err)
	assert.ErrorContains(t, err, objstore.DeadlineEnv)
	require.Error(t, objstore.CheckOptions())
	require.NoError(t, objstore.CheckOptions(objstore.WithRetryDeadline(time.Second)), "an option overrides the variable")
}
