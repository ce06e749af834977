package objstore_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gdsload/gdsload/objstore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseURL(t *testing.T) {
	cases := []struct {
		in          string
		bucket, key string
		ok          bool
	}{
		{"s3://bucket/key", "bucket", "key", true},
		{"s3://bucket/dir/sub/file.tar", "bucket", "dir/sub/file.tar", true},
		{"s3://bucket/prefix/", "bucket", "prefix/", true},
		{"s3://bucket", "bucket", "", true},
		{"s3://bucket/", "bucket", "", true},
		{"s3://my.bucket-1_x/a%20b%3Fc%23d%25", "my.bucket-1_x", "a b?c#d%", true}, // percent-escapes decoded
		{"s3://bucket/a b", "bucket", "a b", true},
		{"s3://bucket/a?b", "", "", false},
		{"s3://bucket/a#b", "", "", false},
		{"s3://bucket/a%zz", "", "", false},
		{"s3://bucket//double", "bucket", "/double", true},
		{"s3:///key", "", "", false},
		{"s3://", "", "", false},
		{"S3://bucket/key", "", "", false},
		{"s3:/bucket/key", "", "", false},
		{"http://bucket/key", "", "", false},
		{"/local/path", "", "", false},
		{"s3://buck et/key", "", "", false},
		{"s3://user@bucket/key", "", "", false},
		{"s3://bucket:9000/key", "", "", false},
		{"s3://" + strings.Repeat("b", 256) + "/k", "", "", false},
		{"s3://bucket/" + strings.Repeat("k", objstore.MaxKeyLen+1), "", "", false},
		{"s3://bucket/\xff", "", "", false},
	}
	for _, c := range cases {
		b, k, err := objstore.ParseURL(c.in)
		assert.Equal(t, (err == nil), c.ok, "ParseURL(%q) = %q, %q, %v; want %q, %q, ok=%v", c.in, b, k, err, c.bucket, c.key, c.ok)
		assert.Equal(t, c.bucket, b, "ParseURL(%q) = %q, %q, %v; want %q, %q, ok=%v", c.in, b, k, err, c.bucket, c.key, c.ok)
		assert.Equal(t, c.key, k, "ParseURL(%q) = %q, %q, %v; want %q, %q, ok=%v", c.in, b, k, err, c.bucket, c.key, c.ok)
		assert.False(t, err != nil && !errors.Is(err, objstore.ErrInvalid), "ParseURL(%q): %v does not match ErrInvalid", c.in, err)
	}
}

// FuzzParseURL: whatever ParseURL accepts, URL formats back into a URL
// that parses to the same bucket and key.
func FuzzParseURL(f *testing.F) {
	for _, s := range []string{"s3://bucket/key", "s3://b/", "s3://b", "s3://b/a/b/", "s3://x/%41%3F%23", "s3:///", "s3://b//", "s3://b/a b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, k, err := objstore.ParseURL(s)
		if err != nil {
			return
		}
		b2, k2, err := objstore.ParseURL(objstore.URL(b, k))
		require.NoError(t, err, "ParseURL(%q) = %q, %q; URL of that parses to %q, %q, %v", s, b, k, b2, k2, err)
		require.EqualValues(t, b, b2, "ParseURL(%q) = %q, %q; URL of that parses to %q, %q, %v", s, b, k, b2, k2, err)
		require.EqualValues(t, k, k2, "ParseURL(%q) = %q, %q; URL of that parses to %q, %q, %v", s, b, k, b2, k2, err)
	})
}

func TestOptions(t *testing.T) {
	cases := []struct {
		name string
		opt  objstore.Option
		ok   bool
	}{
		{"range size", objstore.WithRangeSize(1 << 20), true},
		{"range size too small", objstore.WithRangeSize(objstore.MinRangeSize - 1), false},
		{"range size too large", objstore.WithRangeSize(objstore.MaxRangeSize + 1), false},
		{"concurrency", objstore.WithConcurrency(64), true},
		{"concurrency 0", objstore.WithConcurrency(0), false},
		{"concurrency over the cap", objstore.WithConcurrency(objstore.MaxConcurrency + 1), false},
		{"retry deadline 0", objstore.WithRetryDeadline(0), true},
		{"negative retry deadline", objstore.WithRetryDeadline(-1), false},
		{"stall timeout too short", objstore.WithStallTimeout(1), false},
		{"endpoint", objstore.WithEndpoint("https://s3.example.com:9000"), true},
		{"endpoint without scheme", objstore.WithEndpoint("s3.example.com"), false},
		{"endpoint of another scheme", objstore.WithEndpoint("ftp://x"), false},
		{"static credentials without a secret", objstore.WithStaticCredentials("k", "", ""), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			isolateAWS(t)
			cl, err := objstore.New(t.Context(), c.opt, objstore.WithAnonymous())
			require.EqualValues(t, c.ok, (err == nil), "New: %v, want ok=%v", err, c.ok)
			if cl != nil {
				cl.Close()
			}
		})
	}
}

// TestDefaults: without options or AWS configuration, requests go to AWS
// S3 in DefaultRegion, virtual-hosted; with an endpoint, path-style.
func TestDefaults(t *testing.T) {
	isolateAWS(t)
	cl, err := objstore.New(t.Context())
	require.NoError(t, err)
	require.EqualValues(t, objstore.DefaultRegion, cl.Region(), "region %s endpoint %s", cl.Region(), cl.Endpoint())
	require.EqualValues(t, "https://s3."+objstore.DefaultRegion+".amazonaws.com", cl.Endpoint(), "region %s endpoint %s", cl.Region(), cl.Endpoint())
}
