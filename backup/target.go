package backup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/metad/metad/objectstore"
)

// Target is where backups go. Names are Name's; a Target holds other
// files too and lists only what looks like a backup.
type Target interface {
	// Put stores the backup name, whose bytes write produces, atomically:
	// under name there is the whole backup or nothing. It returns what
	// Fetch needs to read back exactly this copy.
	Put(ctx context.Context, name string, write func(io.Writer) error) (ref string, err error)
	// Fetch gives a local file holding the copy ref names, and a func
	// that releases it.
	Fetch(ctx context.Context, name, ref string) (path string, release func(), err error)
	// List returns the names of the backups it holds (any cluster's).
	List(ctx context.Context) ([]string, error)
	// Delete removes the backup name (every version of it in S3).
	Delete(ctx context.Context, name string) error
	// String is the target's URL, for logs.
	String() string
}

// OpenTarget checks the target url names and opens it, writing nothing:
// a directory must exist and be writable, or be creatable under an
// existing writable one (it is created at the first backup); an s3://
// bucket must be reachable with s3's settings and versioned, as the
// object store's is. Errors start with flag, the setting that named url.
func OpenTarget(ctx context.Context, flag, url string, s3 objectstore.S3Config) (Target, error) {
	scheme, rest, err := ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	if scheme == SchemeS3 {
		st, err := objectstore.OpenS3URL(ctx, "s3://"+rest, s3)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", flag, url, err)
		}
		return &bucketTarget{s3: st, url: url}, nil
	}
	if err := checkDir(rest); err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, url, err)
	}
	return &dirTarget{dir: rest}, nil
}

// checkDir: dir, or its nearest existing ancestor, is a directory this
// process can create files in. The probe file is removed at once.
func checkDir(dir string) error {
	at := dir
	for {
		st, err := os.Stat(at)
		if err == nil {
			if !st.IsDir() {
				return fmt.Errorf("%s is not a directory", at)
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		parent := filepath.Dir(at)
		if parent == at {
			return err
		}
		at = parent
	}
	probe, err := os.CreateTemp(at, ".metad-backup-probe-")
	if err != nil {
		return fmt.Errorf("directory %s is not writable: %w", at, err)
	}
	probe.Close()
	return os.Remove(probe.Name())
}

// dirTarget keeps backups as files in a directory.
type dirTarget struct{ dir string }

func (d *dirTarget) String() string { return "file://" + d.dir }

// Put writes .NAME.part, syncs it, renames it to NAME and syncs the
// directory.
func (d *dirTarget) Put(_ context.Context, name string, write func(io.Writer) error) (string, error) {
	if err := os.MkdirAll(d.dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(d.dir, name)
	part := filepath.Join(d.dir, "."+name+".part")
	f, err := os.OpenFile(part, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return "", err
	}
	err = write(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(part, path)
	}
	if err != nil {
		os.Remove(part)
		return "", err
	}
	return path, syncDir(d.dir)
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

func (d *dirTarget) Fetch(_ context.Context, _, ref string) (string, func(), error) {
	return ref, func() {}, nil
}

func (d *dirTarget) List(context.Context) ([]string, error) {
	ents, err := os.ReadDir(d.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if _, ok := Parse(e.Name()); ok && e.Type().IsRegular() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

func (d *dirTarget) Delete(_ context.Context, name string) error {
	err := os.Remove(filepath.Join(d.dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// bucketTarget keeps backups as objects under an s3:// prefix.
type bucketTarget struct {
	s3  *objectstore.S3
	url string
}

func (b *bucketTarget) String() string { return b.url }

// Put writes the backup to a local temporary file, then stores it with
// one PUT (a completed multipart upload above the part size, which S3
// also makes visible at once or not at all).
func (b *bucketTarget) Put(ctx context.Context, name string, write func(io.Writer) error) (string, error) {
	f, err := os.CreateTemp("", "metad-backup-")
	if err != nil {
		return "", err
	}
	defer func() { f.Close(); os.Remove(f.Name()) }()
	if err := write(f); err != nil {
		return "", err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	info, err := b.s3.Put(ctx, name, f)
	if err != nil {
		return "", err
	}
	return info.Identity, nil
}

// Fetch downloads the version ref names to a temporary file.
func (b *bucketTarget) Fetch(ctx context.Context, name, ref string) (string, func(), error) {
	return Download(ctx, b.s3, name, ref)
}

// Download copies a version of key (ref's, or the current one for "")
// from st to a temporary file, and returns its path and a func that
// removes it.
func Download(ctx context.Context, st *objectstore.S3, key, ref string) (string, func(), error) {
	body, _, err := st.Open(ctx, key, ref)
	if err != nil {
		return "", nil, err
	}
	defer body.Close()
	f, err := os.CreateTemp("", "metad-backup-read-")
	if err != nil {
		return "", nil, err
	}
	release := func() { os.Remove(f.Name()) }
	_, err = io.Copy(f, body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		release()
		return "", nil, fmt.Errorf("read %s: %w", key, err)
	}
	return f.Name(), release, nil
}

func (b *bucketTarget) List(ctx context.Context) ([]string, error) {
	vs, err := b.s3.ListVersions(ctx, namePrefix)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, v := range vs {
		if _, ok := Parse(v.Key); ok && v.Latest && !slices.Contains(out, v.Key) {
			out = append(out, v.Key)
		}
	}
	return out, nil
}

func (b *bucketTarget) Delete(ctx context.Context, name string) error {
	vs, err := b.s3.ListVersions(ctx, name)
	if err != nil {
		return err
	}
	var errs []error
	for _, v := range vs {
		if v.Key == name {
			errs = append(errs, b.s3.DeleteVersion(ctx, v.Key, v.VersionID))
		}
	}
	return errors.Join(errs...)
}
