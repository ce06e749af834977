package miniotest

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/aws-sdk-go-v2/service/sts/types"

	"github.com/gdsload/gdsload/objstore"
)

// Client is a plain AWS SDK client of the deployment with its root
// credentials, for tests to create buckets and write objects (gdsload
// itself only reads).
func (c *Cluster) Client() *s3.Client {
	return s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(c.Endpoint()),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(AccessKey, SecretKey, ""),
	})
}

// MakeBucket creates a bucket.
func (c *Cluster) MakeBucket(ctx context.Context, bucket string) error {
	if _, err := c.Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
		return fmt.Errorf("create bucket %s: %w", bucket, err)
	}
	return nil
}

// Put writes an object in one PUT with a CRC32C of its bytes, which MinIO
// keeps as the object's full-object checksum, and returns its ETag.
func (c *Cluster) Put(ctx context.Context, bucket, key string, data []byte) (string, error) {
	return c.PutWithChecksum(ctx, bucket, key, data, s3types.ChecksumAlgorithmCrc32c)
}

// PutWithChecksum is Put with another checksum algorithm ("" for none).
// A PUT is a test's setup, not what it tests, and is idempotent: one that
// fails is made again, up to putAttempts times in all. A distributed
// cluster on a loaded two-core machine once answered a 32 MiB PUT with
// 400 IncompleteBody (the body did not all arrive), failing a fresh-clone
// CI run in a test about reads.
func (c *Cluster) PutWithChecksum(ctx context.Context, bucket, key string, data []byte, alg s3types.ChecksumAlgorithm) (string, error) {
	var err error
	for attempt := 1; ; attempt++ {
		var out *s3.PutObjectOutput
		out, err = c.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(data), ChecksumAlgorithm: alg})
		if err == nil {
			return aws.ToString(out.ETag), nil
		}
		if attempt == putAttempts || ctx.Err() != nil {
			return "", fmt.Errorf("put s3://%s/%s (attempt %d): %w", bucket, key, attempt, err)
		}
		select {
		case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
		case <-ctx.Done():
		}
	}
}

// putAttempts bounds the PUTs PutWithChecksum makes of one object.
const putAttempts = 3

// PutMany writes many small objects in one request: MinIO's snowball
// upload extracts a tar into one object per member (key = member name):
// one request instead of one per object, which is what makes many small
// objects slow to write (docs/PERFORMANCE-NOTES.md, test fixtures).
func (c *Cluster) PutMany(ctx context.Context, bucket string, keys []string, data func(i int) []byte) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for i, k := range keys {
		b := data(i)
		if err := tw.WriteHeader(&tar.Header{Name: k, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		if _, err := tw.Write(b); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	key := "snowball.tar"
	_, err := c.Client().PutObject(ctx, &s3.PutObjectInput{
		Bucket: &bucket, Key: &key, Body: bytes.NewReader(buf.Bytes()),
		Metadata: map[string]string{"Snowball-Auto-Extract": "true"},
	})
	if err != nil {
		return fmt.Errorf("snowball upload of %d objects to %s: %w", len(keys), bucket, err)
	}
	return nil
}

// TempCredentials asks the deployment's STS (AssumeRole, signed with the
// root credentials) for temporary credentials with a session token, as
// AWS STS gives a web-identity or instance role.
func (c *Cluster) TempCredentials(ctx context.Context) (types.Credentials, error) {
	cl := sts.New(sts.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(c.Endpoint()),
		Credentials:  credentials.NewStaticCredentialsProvider(AccessKey, SecretKey, ""),
	})
	out, err := cl.AssumeRole(ctx, &sts.AssumeRoleInput{
		RoleArn: aws.String("arn:aws:iam::123456789012:role/gdsload-test"), RoleSessionName: aws.String("gdsload-test"),
	})
	if err != nil {
		return types.Credentials{}, fmt.Errorf("AssumeRole: %w", err)
	}
	return *out.Credentials, nil
}

// Options are objstore options for a client of the deployment with its
// root credentials, whatever the machine's AWS configuration says.
func (c *Cluster) Options() []objstore.Option {
	return []objstore.Option{
		objstore.WithEndpoint(c.Endpoint()),
		objstore.WithStaticCredentials(AccessKey, SecretKey, ""),
		objstore.WithRegion("us-east-1"),
		objstore.WithLogger(slog.New(slog.DiscardHandler)),
	}
}

// SetEnv points the AWS environment of the test at the deployment (root
// keys, region, AWS_ENDPOINT_URL_S3), as a user would for the command
// line, after clearing every other AWS_* variable and pointing the shared
// config and credentials files and instance metadata away from the
// machine's.
func (c *Cluster) SetEnv(tb testing.TB) {
	tb.Helper()
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "AWS_") {
			tb.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
	dir := tb.TempDir()
	for k, v := range map[string]string{
		"AWS_CONFIG_FILE":             filepath.Join(dir, "no-config"),
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "no-credentials"),
		"AWS_EC2_METADATA_DISABLED":   "true",
		"AWS_ACCESS_KEY_ID":           AccessKey,
		"AWS_SECRET_ACCESS_KEY":       SecretKey,
		"AWS_REGION":                  "us-east-1",
		"AWS_ENDPOINT_URL_S3":         c.Endpoint(),
	} {
		tb.Setenv(k, v)
	}
}
