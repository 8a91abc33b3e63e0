package objectstore

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"os"
	"sync"
	"syscall"
)

// maxCachedDigests bounds the local store's digest cache: at about 150
// bytes an entry, 64k entries are under 10 MiB.
const maxCachedDigests = 1 << 16

// fileID identifies a file's contents as the kernel sees them: a rewrite
// changes the modification time or the inode, a truncation the size.
type fileID struct {
	dev, ino   uint64
	size       int64
	mtimeNanos int64
}

// digestCache remembers the SHA-256 of files by fileID.
type digestCache struct {
	limit int
	mu    sync.Mutex
	sums  map[fileID]string
}

func newDigestCache(limit int) *digestCache {
	return &digestCache{limit: limit, sums: make(map[fileID]string)}
}

// digest returns "sha256:<hex>" of f's bytes, hashing them only if this
// version of the file has not been hashed before.
func (c *digestCache) digest(f *os.File, fi fs.FileInfo) (string, error) {
	id, ok := idOf(fi)
	if ok {
		c.mu.Lock()
		sum, hit := c.sums[id]
		c.mu.Unlock()
		if hit {
			return sum, nil
		}
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, fi.Size())); err != nil {
		return "", err
	}
	sum := identityPrefix + hex.EncodeToString(h.Sum(nil))
	if ok {
		c.mu.Lock()
		if len(c.sums) >= c.limit {
			for k := range c.sums { // evict an arbitrary entry
				delete(c.sums, k)
				break
			}
		}
		c.sums[id] = sum
		c.mu.Unlock()
	}
	return sum, nil
}

func idOf(fi fs.FileInfo) (fileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{dev: uint64(st.Dev), ino: st.Ino, size: fi.Size(), mtimeNanos: fi.ModTime().UnixNano()}, true
}
