package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/metad/metad/internal/weedtest"
	"github.com/metad/metad/objectstore"
)

// Object store kinds (--store).
const (
	// StoreLocal is one directory every server and the harness share.
	StoreLocal = "local"
	// StoreS3 is a versioned bucket in a real SeaweedFS `weed mini`, which
	// the servers and the harness reach through an S3Proxy.
	StoreS3 = "s3"
)

// s3Bucket and s3Prefix name where a run's objects live in weed mini.
const (
	s3Bucket = "jepsen"
	s3Prefix = "objects"
)

// ObjectStore is where a run's objects live, and the faults it can suffer:
// a version hidden and restored (flapping), the whole store paused or
// killed and restarted (store-unavailable, S3 only).
type ObjectStore struct {
	Kind string
	// Dir is the local store's directory, or weed mini's (S3).
	Dir   string
	weed  *weedtest.Server
	proxy *S3Proxy
	mu    sync.Mutex
	// hidden maps a hidden local version's path to where it was moved.
	hidden map[string]string
	// flipped maps a corrupted local version's path to the byte changed.
	flipped map[string]flip
}

// flip is one byte of a local version file rewritten in place.
type flip struct {
	at       int64
	was, now byte
}

// newObjectStore prepares the store of kind under dir: for S3 it starts
// weed mini, creates the versioned bucket and a proxy in front of it, and
// points this process's AWS SDK credential chain at weed's credentials
// (the servers inherit them).
func newObjectStore(kind, dir string) (*ObjectStore, error) {
	s := &ObjectStore{Kind: kind, hidden: map[string]string{}, flipped: map[string]flip{}}
	switch kind {
	case StoreLocal:
		s.Dir = filepath.Join(dir, "objects")
		return s, os.MkdirAll(s.Dir, 0o755)
	case StoreS3:
	default:
		return nil, fmt.Errorf("store %q: want %s or %s", kind, StoreLocal, StoreS3)
	}
	s.Dir = filepath.Join(dir, "weed")
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return nil, err
	}
	bin, err := weedtest.FindBinary()
	if err != nil {
		return nil, err
	}
	for _, kv := range weedtest.Env(weedtest.AccessKey, weedtest.SecretKey) {
		k, v, _ := strings.Cut(kv, "=")
		if err := os.Setenv(k, v); err != nil {
			return nil, err
		}
	}
	if s.weed, err = weedtest.Launch(bin, s.Dir); err != nil {
		return nil, fmt.Errorf("weed mini: %w", err)
	}
	if err := s.weed.CreateBucket(s3Bucket, true); err != nil {
		s.weed.Stop()
		return nil, err
	}
	if s.proxy, err = NewS3Proxy(s.weed.Endpoint, s3Bucket, s3Prefix); err != nil {
		s.weed.Stop()
		return nil, err
	}
	return s, nil
}

// ServerArgs are the object-store flags of every server.
func (s *ObjectStore) ServerArgs() []string {
	if s.Kind == StoreLocal {
		return []string{"--object-dir", s.Dir}
	}
	return []string{"--object-store", s.url(), "--s3-endpoint", s.proxy.Endpoint(), "--s3-region", weedtest.Region, "--s3-path-style"}
}

// DataDir is what a run that passed may delete: the objects (weed mini's
// log stays beside the servers' logs).
func (s *ObjectStore) DataDir() string {
	if s.Kind == StoreS3 {
		return filepath.Join(s.Dir, "data")
	}
	return s.Dir
}

func (s *ObjectStore) url() string { return "s3://" + s3Bucket + "/" + s3Prefix }

// Open opens the store for the harness's own clients, through the same
// proxy as the servers. S3 calls get a short per-attempt response timeout:
// a paused weed must fail a client's read within its operation's time.
func (s *ObjectStore) Open(ctx context.Context) (objectstore.Store, error) {
	if s.Kind == StoreLocal {
		return objectstore.NewLocal(s.Dir)
	}
	return objectstore.Open(ctx, objectstore.Config{URL: s.url(), S3: objectstore.S3Config{Endpoint: s.proxy.Endpoint(),
		Region: weedtest.Region, PathStyle: true, ResponseTimeout: 2 * time.Second, MaxAttempts: 2}})
}

// Hide makes version (key, identity) unreadable until Restore: the local
// store's version file is moved out of the store's directory (same file
// system, so the move is a rename and the file keeps its identity); S3
// reads of the key get 404 NoSuchKey/NoSuchVersion from the proxy (a real
// bucket cannot bring back a deleted version under its VersionId, so the
// proxy is the honest way to make it vanish and return).
func (s *ObjectStore) Hide(key, identity string) error {
	if s.Kind == StoreS3 {
		s.proxy.Hide(key)
		return nil
	}
	local, err := objectstore.NewLocal(s.Dir)
	if err != nil {
		return err
	}
	from, ok := local.VersionPath(key, identity)
	if !ok {
		return fmt.Errorf("hide %s: %q is no identity of the local store", key, identity)
	}
	to := filepath.Join(filepath.Dir(s.Dir), "hidden", filepath.Base(filepath.Dir(from))+"-"+filepath.Base(from))
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.Rename(from, to); err != nil {
		return fmt.Errorf("hide %s: %w", key, err)
	}
	s.hidden[from] = to
	return nil
}

// RestoreAll brings back every hidden version.
func (s *ObjectStore) RestoreAll() error {
	if s.Kind == StoreS3 {
		s.proxy.RestoreAll()
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for from, to := range s.hidden {
		if err := os.Rename(to, from); err != nil {
			errs = append(errs, fmt.Errorf("restore %s: %w", from, err))
			continue
		}
		delete(s.hidden, from)
	}
	return errors.Join(errs...)
}

// Corrupt rewrites one byte of version (key, identity) in place, the byte
// at offset at of the version's bytes (a byte inside a committed range),
// until RestoreCorrupted: bit rot under a name that still claims the old
// bytes. With S3 the proxy flips the middle byte of every GET body of the
// key instead (a bucket cannot rewrite a version in place); at is unused.
func (s *ObjectStore) Corrupt(key, identity string, at int64) error {
	if s.Kind == StoreS3 {
		s.proxy.Corrupt(key)
		return nil
	}
	local, err := objectstore.NewLocal(s.Dir)
	if err != nil {
		return err
	}
	path, ok := local.VersionPath(key, identity)
	if !ok {
		return fmt.Errorf("corrupt %s: %q is no identity of the local store", key, identity)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.flipped[path]; ok {
		return fmt.Errorf("corrupt %s: already corrupted", key)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("corrupt %s: %w", key, err)
	}
	defer f.Close()
	b := []byte{0}
	if _, err := f.ReadAt(b, at); err != nil {
		return fmt.Errorf("corrupt %s at %d: %w", key, at, err)
	}
	fl := flip{at: at, was: b[0], now: b[0] ^ 0x20}
	if _, err := f.WriteAt([]byte{fl.now}, at); err != nil {
		return fmt.Errorf("corrupt %s at %d: %w", key, at, err)
	}
	s.flipped[path] = fl
	return f.Sync()
}

// RestoreCorrupted writes back every corrupted byte (a version GC deleted
// meanwhile stays deleted) and ends the proxy's corruption.
func (s *ObjectStore) RestoreCorrupted() error {
	if s.Kind == StoreS3 {
		s.proxy.Uncorrupt()
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for path, fl := range s.flipped {
		delete(s.flipped, path)
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("restore %s: %w", path, err))
			continue
		}
		if _, err := f.WriteAt([]byte{fl.was}, fl.at); err != nil {
			errs = append(errs, fmt.Errorf("restore %s: %w", path, err))
		}
		errs = append(errs, f.Sync(), f.Close())
	}
	return errors.Join(errs...)
}

// ErrNotS3 refuses a whole-store fault on the local store: a directory
// cannot be made to time out the way a stopped server does.
var ErrNotS3 = errors.New("the object store is local: store faults need --store s3")

// PauseStore stops weed mini with SIGSTOP: connections are accepted and
// nothing answers. ResumeStore continues it.
func (s *ObjectStore) PauseStore() error {
	if s.weed == nil {
		return ErrNotS3
	}
	s.weed.Pause()
	return nil
}

// ResumeStore continues a paused weed mini.
func (s *ObjectStore) ResumeStore() {
	if s.weed != nil {
		s.weed.Resume()
	}
}

// KillStore kills weed mini (connections are refused); RestartStore starts
// it again on the same ports and data and waits until it answers.
func (s *ObjectStore) KillStore() error {
	if s.weed == nil {
		return ErrNotS3
	}
	s.weed.Stop()
	return nil
}

// RestartStore starts a killed weed mini again; a running one is left.
func (s *ObjectStore) RestartStore() error {
	if s.weed == nil || s.weed.Running() {
		return nil
	}
	return s.weed.Relaunch()
}

// Heal ends every store fault: hidden versions restored, corrupted bytes
// written back, weed mini resumed or restarted.
func (s *ObjectStore) Heal() error {
	s.ResumeStore()
	return errors.Join(s.RestoreAll(), s.RestoreCorrupted(), s.RestartStore())
}

// Close stops weed mini and the proxy.
func (s *ObjectStore) Close() {
	if s.proxy != nil {
		s.proxy.Close()
	}
	if s.weed != nil {
		s.weed.Resume()
		s.weed.Stop()
	}
}
