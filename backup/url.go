package backup

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/metad/metad/objectstore"
)

// SplitObjectURL splits s3://BUCKET/[PREFIX/]KEY into the store's URL
// (s3://BUCKET[/PREFIX]) and the key.
func SplitObjectURL(url string) (store, key string, err error) {
	rest, ok := strings.CutPrefix(url, "s3://")
	bucket, objPath, _ := strings.Cut(rest, "/")
	if !ok || bucket == "" || objPath == "" || strings.HasSuffix(objPath, "/") {
		return "", "", fmt.Errorf("%q: want s3://BUCKET/[PREFIX/]KEY", url)
	}
	dir, key := path.Split(objPath)
	store = "s3://" + bucket
	if dir = strings.Trim(dir, "/"); dir != "" {
		store += "/" + dir
	}
	return store, key, nil
}

// Fetch gives a local snapshot file for url: a path or file:///PATH as
// it is, s3://BUCKET/[PREFIX/]KEY downloaded (its current version) to a
// temporary file. release removes what Fetch made.
func Fetch(ctx context.Context, url string, s3 objectstore.S3Config) (file string, release func(), err error) {
	if !strings.HasPrefix(url, "s3://") {
		return strings.TrimPrefix(url, "file://"), func() {}, nil
	}
	store, key, err := SplitObjectURL(url)
	if err != nil {
		return "", nil, err
	}
	st, err := objectstore.OpenS3URL(ctx, store, s3)
	if err != nil {
		return "", nil, err
	}
	return Download(ctx, st, key, "")
}

// List returns the backups the target url (given by flag) names holds, every cluster's,
// in name order (by cluster, then time).
func List(ctx context.Context, flag, url string, s3 objectstore.S3Config) ([]Entry, error) {
	t, err := OpenTarget(ctx, flag, url, s3)
	if err != nil {
		return nil, err
	}
	names, err := t.List(ctx)
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	out := make([]Entry, 0, len(names))
	for _, n := range names {
		e, _ := Parse(n)
		out = append(out, e)
	}
	return out, nil
}
