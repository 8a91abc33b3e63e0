package cliflags

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/metad/metad/client"
	"github.com/metad/metad/objectstore"
)

// ErrUsage marks a mistake in how a command was called.
var ErrUsage = errors.New("bad usage")

// Usage marks err as bad usage (errors.Is(err, ErrUsage)), keeping its
// text.
func Usage(err error) error { return usageError{err} }

func usage(err error) error { return Usage(err) }

type usageError struct{ error }

func (e usageError) Unwrap() []error { return []error{e.error, ErrUsage} }

// Auth are a client's TLS and token flags, each with its environment
// variable (METAD_TLS_CERT_FILE, ..., METAD_TOKEN).
type Auth struct {
	CertFile, KeyFile, CAFile string
	Token                     string
}

// Register binds the flags to a.
func (a *Auth) Register(fs *pflag.FlagSet) {
	fs.StringVar(&a.CertFile, "tls-cert-file", os.Getenv("METAD_TLS_CERT_FILE"), "PEM client certificate (metad tls cert create --role client) (env METAD_TLS_CERT_FILE)")
	fs.StringVar(&a.KeyFile, "tls-key-file", os.Getenv("METAD_TLS_KEY_FILE"), "PEM key of --tls-cert-file (env METAD_TLS_KEY_FILE)")
	fs.StringVar(&a.CAFile, "tls-ca-file", os.Getenv("METAD_TLS_CA_FILE"), "PEM CA bundle the servers' certificates chain to; turns TLS on (env METAD_TLS_CA_FILE)")
	fs.StringVar(&a.Token, "token", os.Getenv("METAD_TOKEN"), "bearer token (env METAD_TOKEN; prefer the environment: flags show in ps)")
}

// Check refuses TLS flags that do not make a client, naming the flags
// (the client's own message names its Config's fields): a certificate
// without the CA bundle that turns TLS on, a certificate without its key.
func (a *Auth) Check() error {
	if (a.CertFile == "") != (a.KeyFile == "") {
		return usage(errors.New("--tls-cert-file and --tls-key-file go together: give both, or neither"))
	}
	if a.CertFile != "" && a.CAFile == "" {
		return usage(errors.New("--tls-cert-file needs --tls-ca-file, the CA bundle the servers' certificates chain to"))
	}
	return nil
}

// Config is the client configuration for addrs (comma-separated) with
// these credentials. TLS is on when a CA bundle or a certificate is given.
func (a *Auth) Config(addrs string) client.Config {
	c := client.Config{Addrs: strings.Split(addrs, ","), Token: a.Token}
	if a.CAFile != "" || a.CertFile != "" {
		c.TLS = &client.TLS{CAFile: a.CAFile, CertFile: a.CertFile, KeyFile: a.KeyFile}
	}
	return c
}

// CheckAddrs accepts a comma-separated list of HOST:PORT, naming flag in
// the error.
func CheckAddrs(flag, addrs string) error {
	for _, a := range strings.Split(addrs, ",") {
		if err := CheckHostPort(strings.TrimSpace(a)); err != nil {
			return usage(fmt.Errorf("%s %q: %w", flag, a, err))
		}
	}
	return nil
}

// CheckHostPort accepts HOST:PORT with a port in 1..65535.
func CheckHostPort(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return errors.New("want HOST:PORT")
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return fmt.Errorf("port %q: want 1 to 65535", port)
	}
	return nil
}

// RegisterObjectStore binds the object-store flags (package objectstore) to
// cfg: the same names on the server and on every command that reads or
// writes bytes, so one URL works everywhere.
func RegisterObjectStore(fs *pflag.FlagSet, cfg *objectstore.Config) {
	fs.StringVar(&cfg.URL, "object-store", cfg.URL, "object store URL: file://DIR or s3://BUCKET[/PREFIX] (credentials: the AWS SDK's default chain)")
	RegisterS3(fs, &cfg.S3)
}

// RegisterS3 binds the flags that say how to reach an s3:// URL.
func RegisterS3(fs *pflag.FlagSet, s3 *objectstore.S3Config) {
	cfg := struct{ S3 *objectstore.S3Config }{s3}
	fs.StringVar(&cfg.S3.Endpoint, "s3-endpoint", cfg.S3.Endpoint, "S3 endpoint URL for an s3:// store (default: AWS's for the region)")
	fs.StringVar(&cfg.S3.Region, "s3-region", cfg.S3.Region, "S3 region (default: the AWS SDK's, else us-east-1)")
	fs.BoolVar(&cfg.S3.PathStyle, "s3-path-style", cfg.S3.PathStyle, "address the bucket in the URL path (most S3-compatible servers)")
	fs.StringVar(&cfg.S3.CAFile, "s3-ca-file", cfg.S3.CAFile, "PEM CA bundle to trust for an https S3 endpoint")
}

// ClientObjectStore is the object store of a client command:
// --object-store, or --object-dir as its file:// alias.
type ClientObjectStore struct {
	Config objectstore.Config
	Dir    string
}

// Register binds --object-store and its S3 flags, and --object-dir with
// defaultDir as its default ("": no store unless one is named).
func (o *ClientObjectStore) Register(fs *pflag.FlagSet, defaultDir, dirUsage string) {
	RegisterObjectStore(fs, &o.Config)
	fs.StringVar(&o.Dir, "object-dir", defaultDir, dirUsage)
}

// Named says whether the flags name a store.
func (o *ClientObjectStore) Named() bool { return o.Config.URL != "" || o.Dir != "" }

// Describe names the store the flags name, for messages and reports.
func (o *ClientObjectStore) Describe() string {
	if o.Config.URL != "" {
		return o.Config.URL
	}
	return objectstore.FileURL(o.Dir)
}

// Open opens the store the flags name (fs tells whether --object-dir was
// given explicitly). A mistyped directory is refused rather than quietly
// becoming a new, empty store: an append would commit bytes the servers
// cannot see.
func (o *ClientObjectStore) Open(ctx context.Context, fs *pflag.FlagSet) (objectstore.Store, error) {
	cfg := o.Config
	if cfg.URL == "" {
		cfg.URL = objectstore.FileURL(o.Dir)
	} else if fs.Changed("object-dir") {
		return nil, usage(fmt.Errorf("--object-dir and --object-store: give one (object-dir is file://DIR)"))
	}
	return OpenConfig(ctx, cfg)
}

// OpenConfig opens the store cfg names, refusing a file:// directory that
// does not exist.
func OpenConfig(ctx context.Context, cfg objectstore.Config) (objectstore.Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, usage(err)
	}
	if dir, ok := strings.CutPrefix(cfg.URL, "file://"); ok && !isDir(dir) {
		return nil, usage(fmt.Errorf("object store %s: directory %s does not exist (give the servers' object directory)", cfg.URL, dir))
	}
	return objectstore.Open(ctx, cfg)
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// IsTerminal reports whether w is a terminal, where a command may draw
// progress that a file or a pipe should not receive.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
