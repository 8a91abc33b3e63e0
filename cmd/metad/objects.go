package main

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/metad/metad/objectstore"
)

// registerObjectStoreFlags binds the object-store flags (DESIGN.md §11) to
// cfg: the same names on the server and on every command that reads or
// writes bytes, so one URL works everywhere.
func registerObjectStoreFlags(fs *pflag.FlagSet, cfg *objectstore.Config) {
	fs.StringVar(&cfg.URL, "object-store", cfg.URL, "object store URL: file://DIR or s3://BUCKET[/PREFIX] (credentials: the AWS SDK's default chain)")
	fs.StringVar(&cfg.S3.Endpoint, "s3-endpoint", cfg.S3.Endpoint, "S3 endpoint URL for an s3:// store (default: AWS's for the region)")
	fs.StringVar(&cfg.S3.Region, "s3-region", cfg.S3.Region, "S3 region (default: the AWS SDK's, else us-east-1)")
	fs.BoolVar(&cfg.S3.PathStyle, "s3-path-style", cfg.S3.PathStyle, "address the bucket in the URL path (most S3-compatible servers)")
	fs.StringVar(&cfg.S3.CAFile, "s3-ca-file", cfg.S3.CAFile, "PEM CA bundle to trust for an https S3 endpoint")
}

// clientObjectStore is the object store of a client command: --object-store,
// or --object-dir as its file:// alias.
type clientObjectStore struct {
	cfg objectstore.Config
	dir string
}

func (o *clientObjectStore) register(fs *pflag.FlagSet) {
	registerObjectStoreFlags(fs, &o.cfg)
	fs.StringVar(&o.dir, "object-dir", "./metad-data/objects", "local object store directory, an alias of --object-store file://DIR (the server's)")
}

// open opens the store the flags name.
func (o *clientObjectStore) open(ctx context.Context, fs *pflag.FlagSet) (objectstore.Store, error) {
	cfg := o.cfg
	if cfg.URL == "" {
		cfg.URL = objectstore.FileURL(o.dir)
	} else if fs.Changed("object-dir") {
		return nil, usageError{fmt.Errorf("--object-dir and --object-store: give one (object-dir is file://DIR)")}
	}
	if err := cfg.Validate(); err != nil {
		return nil, usageError{err}
	}
	return objectstore.Open(ctx, cfg)
}
