package objstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/gdsload/gdsload/internal/miniotest"
	"github.com/gdsload/gdsload/objstore"
	"github.com/stretchr/testify/require"
)

// The standard AWS credential chain, end to end against MinIO: each source
// the AWS CLI reads, alone in an otherwise empty AWS environment, gives a
// client that reads an object; wrong keys from it fail naming it.

// isolateAWS clears every AWS_* variable for the test and points the
// shared config and credentials files and instance metadata away from
// anything on this machine.
func isolateAWS(t *testing.T) string {
	t.Helper()
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "AWS_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
	dir := t.TempDir()
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "no-config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "no-credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	return dir
}

// chainClient makes a client from the environment alone and checks it
// reads s3://bucket/key.
func chainClient(t *testing.T, bucket, key string, opts ...objstore.Option) *objstore.Client {
	t.Helper()
	cl, err := objstore.New(context.Background(), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { cl.Close() })
	o, err := cl.Open(context.Background(), bucket, key)
	require.NoError(t, err, "open through the credential chain: %v", err)
	got, err := readAll(context.Background(), o)
	require.NoError(t, err, "read through the credential chain: %q, %v", got, err)
	require.Equal(t, "chain", string(got), "read through the credential chain: %q, %v", got, err)
	return cl
}

func TestCredentialChain(t *testing.T) {
	mc := sharedCluster(t, 1)
	b := newBucket(t, mc)
	put(t, mc, b, "k", []byte("chain"))

	t.Run("environment", func(t *testing.T) {
		for _, endpointVar := range []string{"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"} {
			isolateAWS(t)
			t.Setenv("AWS_ACCESS_KEY_ID", miniotest.AccessKey)
			t.Setenv("AWS_SECRET_ACCESS_KEY", miniotest.SecretKey)
			t.Setenv("AWS_REGION", "eu-west-3")
			t.Setenv(endpointVar, mc.Endpoint())
			cl := chainClient(t, b, "k")
			require.EqualValues(t, mc.Endpoint(), cl.Endpoint(), "%s: endpoint %s region %s", endpointVar, cl.Endpoint(), cl.Region())
			require.EqualValues(t, "eu-west-3", cl.Region(), "%s: endpoint %s region %s", endpointVar, cl.Endpoint(), cl.Region())
		}
		t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong-secret")
		wantAuthError(t, b, "the environment (AWS_ACCESS_KEY_ID)")
	})

	t.Run("shared files with AWS_PROFILE", func(t *testing.T) {
		dir := isolateAWS(t)
		cfg, creds := filepath.Join(dir, "config"), filepath.Join(dir, "credentials")
		write(t, cfg, fmt.Sprintf("[default]\nregion = us-west-1\n\n[profile gd]\nregion = ap-south-1\nendpoint_url = %s\n", mc.Endpoint()))
		write(t, creds, fmt.Sprintf("[default]\naws_access_key_id = wrong\naws_secret_access_key = wrong\n\n[gd]\naws_access_key_id = %s\naws_secret_access_key = %s\n", miniotest.AccessKey, miniotest.SecretKey))
		t.Setenv("AWS_CONFIG_FILE", cfg)
		t.Setenv("AWS_SHARED_CREDENTIALS_FILE", creds)
		t.Setenv("AWS_PROFILE", "gd")
		cl := chainClient(t, b, "k")
		require.EqualValues(t, "ap-south-1", cl.Region(), "profile gd: region %s endpoint %s", cl.Region(), cl.Endpoint())
		require.EqualValues(t, mc.Endpoint(), cl.Endpoint(), "profile gd: region %s endpoint %s", cl.Region(), cl.Endpoint())
		// The same files through WithProfile instead of AWS_PROFILE.
		t.Setenv("AWS_PROFILE", "")
		chainClient(t, b, "k", objstore.WithProfile("gd"))
		write(t, creds, fmt.Sprintf("[gd]\naws_access_key_id = %s\naws_secret_access_key = wrong\n", miniotest.AccessKey))
		t.Setenv("AWS_PROFILE", "gd")
		wantAuthError(t, b, "the shared credentials file: "+creds)
	})

	t.Run("web identity", func(t *testing.T) {
		dir := isolateAWS(t)
		tc, err := mc.TempCredentials(context.Background())
		require.NoError(t, err)
		tokenFile := filepath.Join(dir, "token")
		write(t, tokenFile, "service-account-jwt")
		var calls atomic.Int64
		stsSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := r.ParseForm(); err != nil || r.Form.Get("Action") != "AssumeRoleWithWebIdentity" ||
				r.Form.Get("WebIdentityToken") != "service-account-jwt" || r.Form.Get("RoleArn") != "arn:aws:iam::123456789012:role/reader" {
				http.Error(w, "unexpected STS request "+r.Form.Encode(), http.StatusBadRequest)
				return
			}
			calls.Add(1)
			fmt.Fprintf(w, `<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
<AssumeRoleWithWebIdentityResult><Credentials><AccessKeyId>%s</AccessKeyId><SecretAccessKey>%s</SecretAccessKey>
<SessionToken>%s</SessionToken><Expiration>%s</Expiration></Credentials>
<AssumedRoleUser><Arn>arn:aws:sts::123456789012:assumed-role/reader/s</Arn><AssumedRoleId>id:s</AssumedRoleId></AssumedRoleUser>
</AssumeRoleWithWebIdentityResult><ResponseMetadata><RequestId>1</RequestId></ResponseMetadata></AssumeRoleWithWebIdentityResponse>`,
				aws.ToString(tc.AccessKeyId), aws.ToString(tc.SecretAccessKey), aws.ToString(tc.SessionToken), tc.Expiration.UTC().Format(time.RFC3339))
		}))
		defer stsSrv.Close()
		t.Setenv("AWS_WEB_IDENTITY_TOKEN_FILE", tokenFile)
		t.Setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/reader")
		t.Setenv("AWS_ENDPOINT_URL_STS", stsSrv.URL)
		t.Setenv("AWS_ENDPOINT_URL_S3", mc.Endpoint())
		t.Setenv("AWS_REGION", "us-east-1")
		chainClient(t, b, "k")
		require.EqualValues(t, 1, calls.Load(), "%d AssumeRoleWithWebIdentity calls, want 1", calls.Load())
	})

	t.Run("instance metadata", func(t *testing.T) {
		isolateAWS(t)
		tc, err := mc.TempCredentials(context.Background())
		require.NoError(t, err)
		// IMDSv2: a session token first, then the role and its keys.
		imds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case r.Method == http.MethodPut && r.URL.Path == "/latest/api/token":
				w.Header().Set("X-Aws-Ec2-Metadata-Token-Ttl-Seconds", "21600")
				fmt.Fprint(w, "imds-session")
			case r.Header.Get("X-Aws-Ec2-Metadata-Token") != "imds-session":
				http.Error(w, "no IMDSv2 token", http.StatusUnauthorized)
			case r.URL.Path == "/latest/meta-data/iam/security-credentials/":
				fmt.Fprint(w, "reader-role")
			case r.URL.Path == "/latest/meta-data/iam/security-credentials/reader-role":
				json.NewEncoder(w).Encode(map[string]any{
					"Code": "Success", "AccessKeyId": aws.ToString(tc.AccessKeyId), "SecretAccessKey": aws.ToString(tc.SecretAccessKey),
					"Token": aws.ToString(tc.SessionToken), "Expiration": tc.Expiration.UTC().Format(time.RFC3339),
				})
			default:
				http.NotFound(w, r)
			}
		}))
		defer imds.Close()
		t.Setenv("AWS_EC2_METADATA_DISABLED", "false")
		t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.URL)
		t.Setenv("AWS_ENDPOINT_URL_S3", mc.Endpoint())
		t.Setenv("AWS_REGION", "us-east-1")
		chainClient(t, b, "k")
	})

	t.Run("none", func(t *testing.T) {
		isolateAWS(t)
		t.Setenv("AWS_ENDPOINT_URL_S3", mc.Endpoint())
		cl, err := objstore.New(context.Background())
		require.NoError(t, err)
		defer cl.Close()
		_, err = cl.Open(context.Background(), b, "k")
		require.ErrorIs(t, err, objstore.ErrAuth, "with no credentials anywhere: %v, want ErrAuth saying none were found", err)
		require.ErrorContains(t, err, "no usable credentials", "with no credentials anywhere: %v, want ErrAuth saying none were found", err)
		t.Logf("%v", err)
	})
}

// wantAuthError checks that a client from the environment is refused and
// the error names the credential source.
func wantAuthError(t *testing.T, bucket, source string) {
	t.Helper()
	cl, err := objstore.New(context.Background())
	require.NoError(t, err)
	defer cl.Close()
	_, err = cl.Open(context.Background(), bucket, "k")
	require.ErrorIs(t, err, objstore.ErrAuth, "err = %v, want ErrAuth naming %q", err, source)
	require.ErrorContains(t, err, source, "err = %v, want ErrAuth naming %q", err, source)
}

func write(t *testing.T, path, s string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(s), 0o600))
}
