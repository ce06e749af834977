package main

import (
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A wrong endpoint fails the command at once, naming it; --s3-deadline is
// checked as a usage error.
func TestS3WrongEndpointAndDeadlineFlag(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "key")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("GDSLOAD_S3_DEADLINE", "")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	refused := "http://" + l.Addr().String()
	require.NoError(t, l.Close())
	for _, endpoint := range []string{"http://minio.invalid:9000", refused} {
		t.Setenv("AWS_ENDPOINT_URL_S3", endpoint)
		// A deadline of an hour: only failing at once ends the command.
		for _, args := range [][]string{
			{"load", "--to", "host", "--s3-deadline", "1h", "s3://bucket/x.bin"},
			{"stage", "--s3-deadline", "3600", "s3://bucket/x.bin", t.TempDir()},
		} {
			_, stderr, code := run(t, args...)
			assert.Equal(t, exitError, code, "%v: %s", args, stderr)
			assert.Contains(t, stderr, endpoint, args)
			assert.Contains(t, stderr, "cannot reach the store", args)
		}
	}
	_, stderr, code := run(t, "load", "--to", "host", "--s3-deadline", "soon", "s3://bucket/x.bin")
	assert.Equal(t, exitUsage, code, stderr)
	assert.Contains(t, stderr, "--s3-deadline")
}
