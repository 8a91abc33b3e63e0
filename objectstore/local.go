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

// Local stores objects in a directory, one file per (key, identity):
//
//	<dir>/<sha256(key) hex>/key          the key itself, for listing
//	<dir>/<sha256(key) hex>/<identity>   the bytes ("sha256-<hex>")
//
// Putting new bytes under a key writes them to a temporary file, syncs it,
// renames it into place and then removes the key's other identities, so a
// reader holding the old identity fails with ErrIdentityMismatch instead of
// reading new bytes. Several processes (metad nodes and brokers on one
// machine) may share one directory.
type Local struct {
	dir string
}

const identityPrefix = "sha256:"

// NewLocal returns a store rooted at dir, creating it if needed.
func NewLocal(dir string) (*Local, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("objectstore: %w", err)
	}
	return &Local{dir: dir}, nil
}

// Dir is the store's root directory.
func (l *Local) Dir() string { return l.dir }

func (l *Local) keyDir(key string) string {
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(l.dir, hex.EncodeToString(sum[:]))
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
	if err := l.removeOthers(dir, name); err != nil {
		return Info{}, err
	}
	return info, syncDir(dir)
}

// removeOthers deletes every identity of the key but `keep`.
func (l *Local) removeOthers(dir, keep string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "sha256-") && e.Name() != keep {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}

// ReadAt implements Store.
func (l *Local) ReadAt(ctx context.Context, key, identity string, p []byte, off int64) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	name, ok := fileName(identity)
	if !ok {
		return 0, fmt.Errorf("%w: %q is not an identity of this store", ErrIdentityMismatch, identity)
	}
	f, err := os.Open(filepath.Join(l.keyDir(key), name))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, l.missing(ctx, key, identity)
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return f.ReadAt(p, off)
}

// missing explains why (key, identity) is absent: other bytes, or none.
func (l *Local) missing(ctx context.Context, key, identity string) error {
	info, err := l.Head(ctx, key)
	if err != nil {
		return err
	}
	return fmt.Errorf("%w: %q holds %s, not %s", ErrIdentityMismatch, key, info.Identity, identity)
}

// Head implements Store.
func (l *Local) Head(ctx context.Context, key string) (Info, error) {
	if err := ctx.Err(); err != nil {
		return Info{}, err
	}
	entries, err := os.ReadDir(l.keyDir(key))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Info{}, err
	}
	for _, e := range entries {
		hexSum, ok := strings.CutPrefix(e.Name(), "sha256-")
		if !ok {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue // removed concurrently by a Put or Delete
		}
		return Info{Key: key, Identity: identityPrefix + hexSum, Size: fi.Size()}, nil
	}
	return Info{}, fmt.Errorf("%w: %q", ErrNotFound, key)
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
