package objectstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Local stores objects in a directory, one file per version:
//
//	<dir>/<sha256(key) hex>/key          the key itself, for listing
//	<dir>/<sha256(key) hex>/sha256-<hex> one version's bytes
//
// The identity is the SHA-256 digest of the bytes ("sha256:<hex>"), so a
// version is content-addressed: a Put under an existing key with other
// bytes adds a file beside the earlier ones (a second Put of identical
// bytes names the same version). Put writes a temporary file, syncs it and
// renames it into place; only Delete removes a file, exactly one. This is
// the layout earlier releases wrote (they removed a key's other versions on
// Put), so their data directories read unchanged. Several processes (metad
// nodes and brokers on one machine) may share one directory.
type Local struct {
	dir     string
	digests *digestCache
}

const identityPrefix = "sha256:"

// NewLocal returns a store rooted at dir. It writes nothing: dir is
// created by the first Put, so a server whose start is refused after the
// store was opened leaves no trace of it. It fails if dir, or the nearest
// of its parents that exists, is not a directory.
func NewLocal(dir string) (*Local, error) {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err == nil {
			if !fi.IsDir() {
				return nil, fmt.Errorf("objectstore: %s is not a directory", d)
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("objectstore: %w", err)
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	return &Local{dir: dir, digests: newDigestCache(maxCachedDigests)}, nil
}

// Create makes the store's directory (Put makes it too): for a server
// whose start is past its checks, so that clients checking for the
// directory find it before the first object.
func (l *Local) Create() error {
	if err := os.MkdirAll(l.dir, 0o755); err != nil {
		return fmt.Errorf("objectstore: %w", err)
	}
	return nil
}

// Dir is the store's root directory.
func (l *Local) Dir() string { return l.dir }

func (l *Local) keyDir(key string) string {
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(l.dir, hex.EncodeToString(sum[:]))
}

// VersionPath is the file holding version (key, identity), or false for
// an identity that cannot name bytes in this store. Fault tests (the Jepsen
// harness's flapping nemesis) move it away and back to make one version
// vanish and return.
func (l *Local) VersionPath(key, identity string) (string, bool) {
	name, ok := fileName(identity)
	if !ok {
		return "", false
	}
	return filepath.Join(l.keyDir(key), name), true
}

// fileName maps an identity to a file name; identities that are not ours
// map to nothing (they cannot name bytes in this store).
func fileName(identity string) (string, bool) {
	hexSum, ok := strings.CutPrefix(identity, identityPrefix)
	if !ok || len(hexSum) != 64 {
		return "", false
	}
	if _, err := hex.DecodeString(hexSum); err != nil {
		return "", false
	}
	return "sha256-" + hexSum, true
}

// Put implements Store.
func (l *Local) Put(ctx context.Context, key string, r io.Reader) (Info, error) {
	if err := ValidKey(key); err != nil {
		return Info{}, err
	}
	dir := l.keyDir(key)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Info{}, err
	}
	if err := os.WriteFile(filepath.Join(dir, "key"), []byte(key), 0o644); err != nil {
		return Info{}, err
	}
	tmp, err := os.CreateTemp(dir, ".put-*")
	if err != nil {
		return Info{}, err
	}
	defer os.Remove(tmp.Name())
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), readerWithContext(ctx, r))
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Info{}, fmt.Errorf("objectstore: put %q: %w", key, err)
	}
	info := Info{Key: key, Identity: identityPrefix + hex.EncodeToString(h.Sum(nil)), Size: n}
	name, _ := fileName(info.Identity)
	if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		return Info{}, fmt.Errorf("objectstore: put %q: %w", key, err)
	}
	return info, syncDir(dir)
}

// ReadAt implements Store.
func (l *Local) ReadAt(ctx context.Context, key, identity string, p []byte, off int64) (int, error) {
	f, err := l.open(ctx, key, identity)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n, err := f.ReadAt(p, off)
	if off == 0 && (err == nil || errors.Is(err, io.EOF)) {
		if cerr := checkWhole(f, identity, p[:n]); cerr != nil {
			return 0, cerr
		}
	}
	return n, err
}

// open opens the file of version (key, identity).
func (l *Local) open(ctx context.Context, key, identity string) (*os.File, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	name, ok := fileName(identity)
	if !ok {
		return nil, fmt.Errorf("%w: %q is not an identity of this store", ErrIdentityMismatch, identity)
	}
	f, err := os.Open(filepath.Join(l.keyDir(key), name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %q version %s", ErrNotFound, key, identity)
	}
	return f, err
}

// checkWhole verifies the SHA-256 when a read returned the whole file: a
// ranged read cannot be checked without reading everything, a whole one
// costs only the hash.
func checkWhole(f *os.File, identity string, whole []byte) error {
	fi, err := f.Stat()
	if err != nil || fi.Size() != int64(len(whole)) {
		return err
	}
	sum := sha256.Sum256(whole)
	if got := identityPrefix + hex.EncodeToString(sum[:]); got != identity {
		return fmt.Errorf("%w: %s holds bytes hashing to %s", ErrCorrupt, f.Name(), got)
	}
	return nil
}

// Stat implements Store. It checks the bytes, not only the name: the
// file's SHA-256 must be the identity's (ErrCorrupt otherwise), so bytes
// rotting in place fail --verify-objects. The digest is cached by the
// file's identity (device, inode, size, modification time), so a file is
// hashed once, not on every resolve, and a rewritten file is hashed again.
func (l *Local) Stat(ctx context.Context, key, identity string) (Info, error) {
	f, err := l.open(ctx, key, identity)
	if err != nil {
		return Info{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Info{}, err
	}
	digest, err := l.digests.digest(f, fi)
	if err != nil {
		return Info{}, fmt.Errorf("objectstore: stat %q: %w", key, err)
	}
	if digest != identity {
		return Info{}, fmt.Errorf("%w: %s holds bytes hashing to %s", ErrCorrupt, f.Name(), digest)
	}
	return Info{Key: key, Identity: identity, Size: fi.Size()}, nil
}

// Delete implements Store.
func (l *Local) Delete(ctx context.Context, key, identity string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	name, ok := fileName(identity)
	if !ok {
		return nil
	}
	dir := l.keyDir(key)
	err := os.Remove(filepath.Join(dir, name))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("objectstore: delete %q: %w", key, err)
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// readerWithContext stops a long copy when ctx ends.
func readerWithContext(ctx context.Context, r io.Reader) io.Reader {
	return readerFunc(func(p []byte) (int, error) {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		return r.Read(p)
	})
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }
