package miniotest

import (
	"bytes"
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// PutMultipart writes an object as a multipart upload of parts of
// partSize bytes (the last shorter; S3 wants 5 MiB or more for every part
// but the last), as the AWS CLI uploads large files, and returns its ETag
// (the MD5 of the parts' MD5s, "-" and their count).
func (c *Cluster) PutMultipart(ctx context.Context, bucket, key string, data []byte, partSize int) (string, error) {
	cl := c.Client()
	up, err := cl.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &bucket, Key: &key})
	if err != nil {
		return "", fmt.Errorf("miniotest: starting a multipart upload of %s/%s: %w", bucket, key, err)
	}
	var parts []s3types.CompletedPart
	for n, off := int32(1), 0; off < len(data); n, off = n+1, off+partSize {
		body := data[off:min(off+partSize, len(data))]
		out, err := cl.UploadPart(ctx, &s3.UploadPartInput{Bucket: &bucket, Key: &key, UploadId: up.UploadId,
			PartNumber: aws.Int32(n), Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body)))})
		if err != nil {
			return "", fmt.Errorf("miniotest: uploading part %d of %s/%s: %w", n, bucket, key, err)
		}
		parts = append(parts, s3types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(n)})
	}
	done, err := cl.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &bucket, Key: &key, UploadId: up.UploadId,
		MultipartUpload: &s3types.CompletedMultipartUpload{Parts: parts}})
	if err != nil {
		return "", fmt.Errorf("miniotest: completing the multipart upload of %s/%s: %w", bucket, key, err)
	}
	return aws.ToString(done.ETag), nil
}
