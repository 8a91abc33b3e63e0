package objectstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// S3 stores objects in a versioned S3 bucket (any S3-compatible server).
// A version's identity is "s3:<sha256 hex>:<etag>:<version id>": the
// VersionId names the version, the ETag is sent as If-Match on every read
// so a server holding other bytes under that version answers 412, and the
// SHA-256 — also stored with the object, as its x-amz-checksum-sha256 when
// put in one request and as the metadata entry sha256 always — lets a
// whole-object read prove the bytes.
type S3 struct {
	client *s3.Client
	bucket string
	prefix string // "" or "PREFIX/"
	cfg    S3Config
}

const s3IdentityPrefix = "s3:"

// metaSHA256 is the user-metadata entry (x-amz-meta-sha256) holding the
// hex SHA-256 of the whole object.
const metaSHA256 = "sha256"

// OpenS3 connects to bucket and checks it is reachable and versioned.
func OpenS3(ctx context.Context, bucket, prefix string, c S3Config) (*S3, error) {
	c = c.withDefaults()
	if errs := c.validate(); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	client, err := newS3Client(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("object store s3://%s: %w", bucket, err)
	}
	s := &S3{client: client, bucket: bucket, cfg: c}
	if prefix != "" {
		s.prefix = prefix + "/"
	}
	if err := s.checkBucket(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

func newS3Client(ctx context.Context, c S3Config) (*s3.Client, error) {
	tlsConf, err := tlsConfig(c)
	if err != nil {
		return nil, err
	}
	httpClient := awshttp.NewBuildableClient().
		WithDialerOptions(func(d *net.Dialer) { d.Timeout = c.ResponseTimeout }).
		WithTransportOptions(func(tr *http.Transport) {
			tr.ResponseHeaderTimeout = c.ResponseTimeout
			if tlsConf != nil {
				tr.TLSClientConfig = tlsConf
			}
		})
	opts := []func(*config.LoadOptions) error{
		config.WithHTTPClient(httpClient),
		config.WithRetryMaxAttempts(c.MaxAttempts),
	}
	if c.Region != "" {
		opts = append(opts, config.WithRegion(c.Region))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("AWS configuration: %w", err)
	}
	if awsCfg.Region == "" {
		awsCfg.Region = "us-east-1"
	}
	return s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if c.Endpoint != "" {
			o.BaseEndpoint = aws.String(c.Endpoint)
		}
		o.UsePathStyle = c.PathStyle
		// Checksums are the ones this store asks for (SHA-256), not the
		// SDK's default CRC trailers, which not every S3-compatible
		// server accepts.
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	}), nil
}

// tlsConfig is the configured TLS, or the system pool plus CAFile.
func tlsConfig(c S3Config) (*tls.Config, error) {
	if c.TLS != nil || c.CAFile == "" {
		return c.TLS, nil
	}
	pem, err := os.ReadFile(c.CAFile)
	if err != nil {
		return nil, fmt.Errorf("s3 CA file: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("s3 CA file %s: no PEM certificate in it", c.CAFile)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// checkBucket refuses a bucket that cannot be reached or is not versioned:
// without versions, a Put would destroy the bytes a reader was promised.
func (s *S3) checkBucket(ctx context.Context) error {
	out, err := s.client.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String(s.bucket)})
	where := s.bucket
	if s.cfg.Endpoint != "" {
		where += " at " + s.cfg.Endpoint
	}
	if err != nil {
		return fmt.Errorf("object store s3://%s: bucket not usable: %s", where, describeStartError(err))
	}
	if out.Status != types.BucketVersioningStatusEnabled {
		state := "is " + string(out.Status)
		if out.Status == "" {
			state = "was never enabled"
		}
		return fmt.Errorf("object store s3://%s: bucket versioning %s; metad needs it Enabled (aws s3api put-bucket-versioning --bucket %s --versioning-configuration Status=Enabled)", where, state, s.bucket)
	}
	return nil
}

// describeStartError says in a few words why the bucket check failed.
func describeStartError(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode() {
		case "NoSuchBucket":
			return "no such bucket"
		case "InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "Forbidden":
			return "credentials refused (" + apiErr.ErrorCode() + ": " + apiErr.ErrorMessage() + ")"
		}
		return apiErr.ErrorCode() + ": " + apiErr.ErrorMessage()
	}
	if !answered(err) {
		return "endpoint unreachable (" + lastLine(err) + ")"
	}
	var respErr *awshttp.ResponseError
	if errors.As(err, &respErr) {
		return fmt.Sprintf("HTTP %d (%s)", respErr.HTTPStatusCode(), lastLine(err))
	}
	return lastLine(err)
}

// lastLine keeps an error on one line.
func lastLine(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", " ")
}

func (s *S3) objectKey(key string) string { return s.prefix + key }

// s3Identity is a parsed identity.
type s3Identity struct {
	sha256, etag, versionID string
}

func (id s3Identity) String() string {
	return s3IdentityPrefix + id.sha256 + ":" + id.etag + ":" + id.versionID
}

func (id s3Identity) quotedETag() *string { return aws.String(`"` + id.etag + `"`) }

// parseS3Identity parses "s3:<sha256 hex>:<etag>:<version id>".
func parseS3Identity(identity string) (s3Identity, error) {
	rest, ok := strings.CutPrefix(identity, s3IdentityPrefix)
	parts := strings.SplitN(rest, ":", 3)
	if !ok || len(parts) != 3 || len(parts[0]) != 64 || parts[1] == "" || parts[2] == "" {
		return s3Identity{}, fmt.Errorf("%w: %q is not an identity of an s3:// store", ErrIdentityMismatch, identity)
	}
	if _, err := hex.DecodeString(parts[0]); err != nil {
		return s3Identity{}, fmt.Errorf("%w: %q is not an identity of an s3:// store", ErrIdentityMismatch, identity)
	}
	return s3Identity{sha256: parts[0], etag: parts[1], versionID: parts[2]}, nil
}

// Put implements Store: one PutObject up to PartSize, a multipart upload
// above. The SHA-256 is computed before the upload (it is stored with the
// object), so a reader that cannot seek is spooled to a temporary file.
func (s *S3) Put(ctx context.Context, key string, r io.Reader) (Info, error) {
	if err := ValidKey(key); err != nil {
		return Info{}, err
	}
	body, size, sum, done, err := hashedBody(ctx, r)
	if err != nil {
		return Info{}, fmt.Errorf("objectstore: put %q: %w", key, err)
	}
	defer done()
	var etag, versionID *string
	if size <= s.cfg.PartSize {
		etag, versionID, err = s.putOnce(ctx, key, body, size, sum)
	} else {
		etag, versionID, err = s.putMultipart(ctx, key, body, sum)
	}
	if err != nil {
		return Info{}, classify(fmt.Sprintf("put %q", key), err)
	}
	vid := aws.ToString(versionID)
	if vid == "" || vid == "null" {
		return Info{}, fmt.Errorf("objectstore: put %q: bucket %s returned no version id (versioning turned off?)", key, s.bucket)
	}
	id := s3Identity{sha256: hex.EncodeToString(sum), etag: strings.Trim(aws.ToString(etag), `"`), versionID: vid}
	return Info{Key: key, Identity: id.String(), Size: size}, nil
}

func (s *S3) putOnce(ctx context.Context, key string, body io.ReadSeeker, size int64, sum []byte) (etag, versionID *string, err error) {
	out, err := s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(s.bucket), Key: aws.String(s.objectKey(key)), Body: body, ContentLength: aws.Int64(size),
		ChecksumSHA256: aws.String(base64.StdEncoding.EncodeToString(sum)),
		Metadata:       map[string]string{metaSHA256: hex.EncodeToString(sum)},
	})
	if err != nil {
		return nil, nil, err
	}
	return out.ETag, out.VersionId, nil
}

// putMultipart uploads body in PartSize parts, aborting the upload on any
// failure so no parts are left behind.
func (s *S3) putMultipart(ctx context.Context, key string, body io.Reader, sum []byte) (etag, versionID *string, err error) {
	created, err := s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{
		Bucket: aws.String(s.bucket), Key: aws.String(s.objectKey(key)),
		Metadata: map[string]string{metaSHA256: hex.EncodeToString(sum)},
	})
	if err != nil {
		return nil, nil, err
	}
	parts, err := s.uploadParts(ctx, key, created.UploadId, body)
	if err == nil {
		var out *s3.CompleteMultipartUploadOutput
		out, err = s.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
			Bucket: aws.String(s.bucket), Key: aws.String(s.objectKey(key)), UploadId: created.UploadId,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
		})
		if err == nil {
			return out.ETag, out.VersionId, nil
		}
	}
	_, _ = s.client.AbortMultipartUpload(context.WithoutCancel(ctx), &s3.AbortMultipartUploadInput{
		Bucket: aws.String(s.bucket), Key: aws.String(s.objectKey(key)), UploadId: created.UploadId})
	return nil, nil, err
}

func (s *S3) uploadParts(ctx context.Context, key string, uploadID *string, body io.Reader) ([]types.CompletedPart, error) {
	var parts []types.CompletedPart
	buf := make([]byte, s.cfg.PartSize)
	for number := int32(1); ; number++ {
		n, err := io.ReadFull(body, buf)
		if n == 0 && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) {
			return parts, nil
		}
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, err
		}
		out, err := s.client.UploadPart(ctx, &s3.UploadPartInput{
			Bucket: aws.String(s.bucket), Key: aws.String(s.objectKey(key)), UploadId: uploadID,
			PartNumber: aws.Int32(number), Body: bytes.NewReader(buf[:n]), ContentLength: aws.Int64(int64(n)),
		})
		if err != nil {
			return nil, err
		}
		parts = append(parts, types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(number)})
		if n < len(buf) {
			return parts, nil
		}
	}
}

// hashedBody returns r as a seekable body positioned at its start, with
// its size and SHA-256. done releases any temporary file.
func hashedBody(ctx context.Context, r io.Reader) (body io.ReadSeeker, size int64, sum []byte, done func(), err error) {
	h := sha256.New()
	if rs, ok := r.(io.ReadSeeker); ok {
		start, err := rs.Seek(0, io.SeekCurrent)
		if err == nil {
			size, err = io.Copy(h, readerWithContext(ctx, rs))
		}
		if err == nil {
			_, err = rs.Seek(start, io.SeekStart)
		}
		return rs, size, h.Sum(nil), func() {}, err
	}
	return spool(ctx, r, h)
}

// spool copies r to a temporary file while hashing it.
func spool(ctx context.Context, r io.Reader, h hash.Hash) (io.ReadSeeker, int64, []byte, func(), error) {
	f, err := os.CreateTemp("", "metad-put-")
	if err != nil {
		return nil, 0, nil, nil, err
	}
	done := func() { f.Close(); os.Remove(f.Name()) }
	size, err := io.Copy(io.MultiWriter(f, h), readerWithContext(ctx, r))
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		done()
		return nil, 0, nil, nil, err
	}
	return f, size, h.Sum(nil), done, nil
}

// ReadAt implements Store: GetObject of the version with If-Match and a
// Range. A read from offset 0 that returns the whole object is hashed and
// checked against the identity's SHA-256.
func (s *S3) ReadAt(ctx context.Context, key, identity string, p []byte, off int64) (int, error) {
	id, err := parseS3Identity(identity)
	if err != nil {
		return 0, err
	}
	if len(p) == 0 {
		_, err := s.Stat(ctx, key, identity)
		return 0, err
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{
		Bucket: aws.String(s.bucket), Key: aws.String(s.objectKey(key)), VersionId: aws.String(id.versionID),
		IfMatch: id.quotedETag(), Range: aws.String(fmt.Sprintf("bytes=%d-%d", off, off+int64(len(p))-1)),
	})
	if err != nil {
		if isRangeNotSatisfiable(err) {
			return 0, io.EOF
		}
		return 0, classify(fmt.Sprintf("read %q", key), err)
	}
	defer out.Body.Close()
	if got := strings.Trim(aws.ToString(out.ETag), `"`); got != id.etag {
		return 0, fmt.Errorf("%w: %q version %s has ETag %s, not %s", ErrIdentityMismatch, key, id.versionID, got, id.etag)
	}
	n, err := io.ReadFull(out.Body, p)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return n, classify(fmt.Sprintf("read %q", key), err)
	}
	if off == 0 && totalSize(out.ContentRange) == int64(n) {
		if got := sha256.Sum256(p[:n]); hex.EncodeToString(got[:]) != id.sha256 {
			return 0, fmt.Errorf("%w: %q version %s hashes to %x, not %s", ErrCorrupt, key, id.versionID, got, id.sha256)
		}
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// totalSize parses the total of a Content-Range "bytes A-B/TOTAL"; -1 if
// unknown.
func totalSize(contentRange *string) int64 {
	_, total, ok := strings.Cut(aws.ToString(contentRange), "/")
	if !ok {
		return -1
	}
	n, err := strconv.ParseInt(total, 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// Stat implements Store: HeadObject of the version with If-Match, and the
// stored SHA-256 compared with the identity's.
func (s *S3) Stat(ctx context.Context, key, identity string) (Info, error) {
	id, err := parseS3Identity(identity)
	if err != nil {
		return Info{}, err
	}
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{
		Bucket: aws.String(s.bucket), Key: aws.String(s.objectKey(key)), VersionId: aws.String(id.versionID), IfMatch: id.quotedETag(),
	})
	if err != nil {
		return Info{}, classify(fmt.Sprintf("stat %q", key), err)
	}
	if got := strings.Trim(aws.ToString(out.ETag), `"`); got != id.etag {
		return Info{}, fmt.Errorf("%w: %q version %s has ETag %s, not %s", ErrIdentityMismatch, key, id.versionID, got, id.etag)
	}
	if got := out.Metadata[metaSHA256]; got != "" && got != id.sha256 {
		return Info{}, fmt.Errorf("%w: %q version %s holds SHA-256 %s, not %s", ErrIdentityMismatch, key, id.versionID, got, id.sha256)
	}
	return Info{Key: key, Identity: identity, Size: aws.ToInt64(out.ContentLength)}, nil
}

// Delete implements Store: DeleteObject of exactly the identity's version,
// never of the bare key (which would add a delete marker, or on an
// unversioned bucket destroy the current bytes).
func (s *S3) Delete(ctx context.Context, key, identity string) error {
	id, err := parseS3Identity(identity)
	if err != nil {
		return nil // not a version of this store: nothing of ours to delete
	}
	_, err = s.client.DeleteObject(ctx, &s3.DeleteObjectInput{
		Bucket: aws.String(s.bucket), Key: aws.String(s.objectKey(key)), VersionId: aws.String(id.versionID),
	})
	if err = classify(fmt.Sprintf("delete %q", key), err); errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// classify maps an SDK error onto this package's sentinels: a missing
// version is ErrNotFound, a failed If-Match ErrIdentityMismatch, a server
// that did not answer (5xx, throttling, timeouts, refused connections)
// ErrUnavailable. The caller's own cancellation stays what it is.
func classify(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("objectstore: %s: %w", op, err)
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode() {
		case "NoSuchKey", "NoSuchVersion", "NotFound":
			return fmt.Errorf("%w: %s: %w", ErrNotFound, op, err)
		case "PreconditionFailed":
			return fmt.Errorf("%w: %s: %w", ErrIdentityMismatch, op, err)
		case "SlowDown", "Throttling", "ThrottlingException", "RequestTimeout", "InternalError", "ServiceUnavailable":
			return fmt.Errorf("%w: %s: %w", ErrUnavailable, op, err)
		}
	}
	if !answered(err) {
		return fmt.Errorf("%w: %s: %w", ErrUnavailable, op, err)
	}
	var respErr *awshttp.ResponseError
	if !errors.As(err, &respErr) {
		return fmt.Errorf("objectstore: %s: %w", op, err)
	}
	switch code := respErr.HTTPStatusCode(); {
	case code == http.StatusNotFound:
		return fmt.Errorf("%w: %s: %w", ErrNotFound, op, err)
	case code == http.StatusPreconditionFailed:
		return fmt.Errorf("%w: %s: %w", ErrIdentityMismatch, op, err)
	case code >= 500 || code == http.StatusTooManyRequests || code == http.StatusForbidden:
		// 403: this client may not read the bucket; the object is not at
		// fault, so it is no candidate failure.
		return fmt.Errorf("%w: %s: %w", ErrUnavailable, op, err)
	}
	return fmt.Errorf("objectstore: %s: %w", op, err)
}

// answered reports whether the server sent an HTTP response: without one
// the connection failed or timed out (the SDK then reports status 0).
func answered(err error) bool {
	var respErr *awshttp.ResponseError
	if !errors.As(err, &respErr) {
		var netErr net.Error
		return !errors.As(err, &netErr)
	}
	return respErr.HTTPStatusCode() != 0
}

func isRangeNotSatisfiable(err error) bool {
	var respErr *awshttp.ResponseError
	return errors.As(err, &respErr) && respErr.HTTPStatusCode() == http.StatusRequestedRangeNotSatisfiable
}

// Version is one stored version of a key, as ListVersions finds it.
type Version struct {
	// Key is relative to the store's prefix.
	Key       string
	VersionID string
	Size      int64
	// Latest is the key's current version.
	Latest bool
}

// ListVersions returns every version (delete markers aside) of every key
// that starts with prefix, relative to the store's prefix. Scheduled
// backups list and prune their files with it; objects are never listed.
func (s *S3) ListVersions(ctx context.Context, prefix string) ([]Version, error) {
	var out []Version
	p := s3.NewListObjectVersionsPaginator(s.client, &s3.ListObjectVersionsInput{
		Bucket: aws.String(s.bucket), Prefix: aws.String(s.objectKey(prefix))})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, classify(fmt.Sprintf("list %q", prefix), err)
		}
		for _, v := range page.Versions {
			out = append(out, Version{Key: strings.TrimPrefix(aws.ToString(v.Key), s.prefix),
				VersionID: aws.ToString(v.VersionId), Size: aws.ToInt64(v.Size), Latest: aws.ToBool(v.IsLatest)})
		}
	}
	return out, nil
}

// DeleteVersion removes exactly one version of key; a version that is not
// there is not an error.
func (s *S3) DeleteVersion(ctx context.Context, key, versionID string) error {
	if versionID == "" {
		return fmt.Errorf("objectstore: delete %q: no version id", key)
	}
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{
		Bucket: aws.String(s.bucket), Key: aws.String(s.objectKey(key)), VersionId: aws.String(versionID)})
	if err = classify(fmt.Sprintf("delete %q", key), err); errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// Open streams a whole version of key: the one identity names, or the
// current one when identity is "". The bytes are not checked here; the
// caller reads them through its own checksum (a snapshot file carries
// one).
func (s *S3) Open(ctx context.Context, key, identity string) (io.ReadCloser, int64, error) {
	in := &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(s.objectKey(key))}
	if identity != "" {
		id, err := parseS3Identity(identity)
		if err != nil {
			return nil, 0, err
		}
		in.VersionId, in.IfMatch = aws.String(id.versionID), id.quotedETag()
	}
	out, err := s.client.GetObject(ctx, in)
	if err != nil {
		return nil, 0, classify(fmt.Sprintf("read %q", key), err)
	}
	return out.Body, aws.ToInt64(out.ContentLength), nil
}

// OpenS3URL opens the s3://BUCKET[/PREFIX] store url names, with c's
// settings (Open's checks: reachable, versioned).
func OpenS3URL(ctx context.Context, url string, c S3Config) (*S3, error) {
	scheme, rest, err := splitURL(url)
	if err != nil {
		return nil, err
	}
	if scheme != "s3" {
		return nil, fmt.Errorf("%q: not an s3:// URL", url)
	}
	bucket, prefix, _ := strings.Cut(rest, "/")
	return OpenS3(ctx, bucket, strings.Trim(prefix, "/"), c)
}
