package objstore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gdsload/gdsload/internal/miniotest"
	"github.com/gdsload/gdsload/objstore"
)

// A long-lived client (as a vfs.Mux in a Python process keeps) resolves
// its credentials again after the store refuses them, or after none were
// found: keys fixed in the environment are then used, without a new
// client.
func TestCredentialsResolvedAgain(t *testing.T) {
	mc := sharedCluster(t, 1)
	b := newBucket(t, mc)
	put(t, mc, b, "k", []byte("again"))
	for _, tc := range []struct {
		name       string
		key, wrong string // the keys the client starts with
	}{
		{"wrong secret", miniotest.AccessKey, "not-the-secret"},
		{"unknown key", "nobody-at-all", miniotest.SecretKey},
		{"no keys", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			isolateAWS(t)
			t.Setenv("AWS_ENDPOINT_URL_S3", mc.Endpoint())
			t.Setenv("AWS_REGION", "us-east-1")
			t.Setenv("AWS_ACCESS_KEY_ID", tc.key)
			t.Setenv("AWS_SECRET_ACCESS_KEY", tc.wrong)
			cl, err := objstore.New(context.Background())
			require.NoError(t, err)
			defer cl.Close()
			_, err = cl.Open(context.Background(), b, "k")
			require.ErrorIs(t, err, objstore.ErrAuth)
			// Still wrong: refused again, not a stale success.
			_, err = cl.Open(context.Background(), b, "k")
			require.ErrorIs(t, err, objstore.ErrAuth)

			t.Setenv("AWS_ACCESS_KEY_ID", miniotest.AccessKey)
			t.Setenv("AWS_SECRET_ACCESS_KEY", miniotest.SecretKey)
			o, err := cl.Open(context.Background(), b, "k")
			require.NoError(t, err, "the fixed keys are used by the same client")
			got, err := readAll(context.Background(), o)
			require.NoError(t, err)
			assert.Equal(t, "again", string(got))
		})
	}
}

// The message of a refused stat is the one docs/S3.md shows.
func TestRefusedStatMessage(t *testing.T) {
	mc := sharedCluster(t, 1)
	b := newBucket(t, mc)
	put(t, mc, b, "k", []byte("x"))
	isolateAWS(t)
	t.Setenv("AWS_ENDPOINT_URL_S3", mc.Endpoint())
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", miniotest.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
	cl, err := objstore.New(context.Background())
	require.NoError(t, err)
	defer cl.Close()
	_, err = cl.Stat(context.Background(), b, "k")
	require.ErrorIs(t, err, objstore.ErrAuth)
	want := "objstore stat s3://" + b + "/k: the store refused the request signed with credentials from the environment (AWS_ACCESS_KEY_ID), access key " +
		miniotest.AccessKey + "; check the keys, AWS_PROFILE, the endpoint and the bucket's policy (endpoint " + mc.Endpoint() + "): access denied: HTTP 403 Forbidden"
	assert.Equal(t, want, err.Error())
}
