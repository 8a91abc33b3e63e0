package objectstore

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Config chooses and configures a store. Open turns it into a Store.
type Config struct {
	// URL is file://DIR (a directory; relative paths are allowed, as in
	// file://./metad-data/objects) or s3://BUCKET[/PREFIX]. Required.
	URL string
	// S3 configures an s3:// store; ignored for file://.
	S3 S3Config
}

// S3Config configures the S3 client. Credentials come from the AWS SDK's
// default chain (environment, shared config and credentials files, web
// identity, instance role), never from here.
type S3Config struct {
	// Endpoint is the S3 service's base URL (http://host:port for an
	// S3-compatible server). Default: AWS's endpoint for the region.
	Endpoint string
	// Region signs the requests. Default: the SDK's (AWS_REGION, shared
	// config), else us-east-1.
	Region string
	// PathStyle addresses the bucket in the path (http://host/bucket/key)
	// rather than the host name; most S3-compatible servers need it.
	PathStyle bool
	// CAFile is a PEM bundle of CAs to trust for an https endpoint, on top
	// of the system's. Optional.
	CAFile string
	// TLS, when set, is the TLS configuration of the HTTP client (it wins
	// over CAFile). Optional.
	TLS *tls.Config
	// PartSize is the size of each part of a multipart upload; objects of
	// at most this size are put in one request. Default 16 MiB; range
	// [5 MiB, 5 GiB] (S3's own bounds on a part).
	PartSize int64
	// MaxAttempts bounds the SDK retryer's attempts per request (5xx,
	// throttling, connection errors). Default 3; range [1, 10].
	MaxAttempts int
	// ResponseTimeout bounds the wait for a response's headers, per
	// attempt. Default 30s; range [100ms, 10m].
	ResponseTimeout time.Duration
}

const (
	minPartSize = 5 << 20
	maxPartSize = 5 << 30
)

// withDefaults fills the zero fields with the defaults documented above.
func (c S3Config) withDefaults() S3Config {
	if c.PartSize == 0 {
		c.PartSize = 16 << 20
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = 3
	}
	if c.ResponseTimeout == 0 {
		c.ResponseTimeout = 30 * time.Second
	}
	return c
}

// Validate reports every problem with the configuration at once, naming
// the setting at fault.
func (c Config) Validate() error {
	var errs []error
	scheme, _, err := splitURL(c.URL)
	if err != nil {
		errs = append(errs, err)
	}
	if scheme == "s3" {
		errs = append(errs, c.S3.withDefaults().validate()...)
	}
	return errors.Join(errs...)
}

func (c S3Config) validate() []error {
	var errs []error
	if c.Endpoint != "" {
		if u, err := url.Parse(c.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("s3-endpoint %q: want http://HOST[:PORT] or https://HOST[:PORT]", c.Endpoint))
		}
	}
	if c.PartSize < minPartSize || c.PartSize > maxPartSize {
		errs = append(errs, fmt.Errorf("s3 part size %d: want [%d, %d] bytes", c.PartSize, minPartSize, maxPartSize))
	}
	if c.MaxAttempts < 1 || c.MaxAttempts > 10 {
		errs = append(errs, fmt.Errorf("s3 max attempts %d: want [1, 10]", c.MaxAttempts))
	}
	if c.ResponseTimeout < 100*time.Millisecond || c.ResponseTimeout > 10*time.Minute {
		errs = append(errs, fmt.Errorf("s3 response timeout %v: want [100ms, 10m]", c.ResponseTimeout))
	}
	return errs
}

// splitURL parses a store URL into its scheme ("file" or "s3") and the
// rest: the directory, or BUCKET[/PREFIX].
func splitURL(raw string) (scheme, rest string, err error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	switch {
	case raw == "":
		return "", "", errors.New("object-store: empty; want file://DIR or s3://BUCKET[/PREFIX]")
	case !ok || (scheme != "file" && scheme != "s3"):
		return "", "", fmt.Errorf("object-store %q: want file://DIR or s3://BUCKET[/PREFIX]", raw)
	case rest == "":
		return "", "", fmt.Errorf("object-store %q: names no %s", raw, map[string]string{"file": "directory", "s3": "bucket"}[scheme])
	}
	return scheme, rest, nil
}

// FileURL is the file:// URL of a directory, for the --object-dir alias.
func FileURL(dir string) string { return "file://" + dir }

// Open validates cfg and opens the store it names. An s3:// store is
// checked first: the bucket must be reachable with the credentials at
// hand and have versioning enabled, else Open fails with one line naming
// the bucket.
func Open(ctx context.Context, cfg Config) (Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	scheme, rest, _ := splitURL(cfg.URL)
	if scheme == "file" {
		return NewLocal(rest)
	}
	bucket, prefix, _ := strings.Cut(rest, "/")
	return OpenS3(ctx, bucket, strings.Trim(prefix, "/"), cfg.S3)
}

// CheckConfig is Open without opening, for a configuration check that must
// write nothing (metad server --validate): an s3:// bucket is checked as
// Open checks it; a file:// directory must be a writable directory, or,
// if it does not exist yet, be creatable in the nearest directory above it
// that exists.
func CheckConfig(ctx context.Context, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	scheme, rest, _ := splitURL(cfg.URL)
	if scheme != "file" {
		_, err := Open(ctx, cfg)
		return err
	}
	return checkLocalDir(rest)
}

// access(2) modes (unistd.h), which package syscall does not name.
const (
	accessWrite  = 2 // W_OK
	accessSearch = 1 // X_OK
)

// checkLocalDir: dir, or the nearest existing directory above it, is a
// directory this process may write in. Its errors name the directory, as
// NewLocal's do; the caller names the setting.
func checkLocalDir(dir string) error {
	at := filepath.Clean(dir)
	for {
		st, err := os.Stat(at)
		switch {
		case err == nil && !st.IsDir():
			return fmt.Errorf("objectstore: %s is not a directory", at)
		case err == nil:
			if err := syscall.Access(at, accessWrite|accessSearch); err != nil {
				return fmt.Errorf("objectstore: %s is not writable: %w", at, err)
			}
			return nil
		case !errors.Is(err, os.ErrNotExist):
			return fmt.Errorf("objectstore: %w", err)
		}
		parent := filepath.Dir(at)
		if parent == at {
			return fmt.Errorf("objectstore: no directory of %s exists", dir)
		}
		at = parent
	}
}
