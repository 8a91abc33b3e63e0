package faultfs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// Op is an operation a fault can fail.
type Op int

// The operations Fail can fail.
const (
	Fsync Op = iota + 1 // fsync and fdatasync: EIO, after the file's unsynced writes are dropped
	Write               // write: EIO, nothing written
)

func (o Op) String() string {
	switch o {
	case Fsync:
		return "fsync"
	case Write:
		return "write"
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

// FS is a mounted fault filesystem.
type FS struct {
	backing, mountpoint string
	root                *fs.LoopbackRoot
	server              *fuse.Server

	mu       sync.Mutex
	faults   map[Op]string          // an armed fault: the path part a file must contain ("" every file)
	injected map[Op]int             // faults injected so far
	journals map[*fs.Inode]*journal // unsynced writes, per file
}

// journal is one file's writes since its last successful sync.
// Invariant: undoing undo in reverse, then truncating to synced, restores
// the backing file to its content at that sync.
type journal struct {
	path   string // the backing path at the last write
	synced int64  // the file's size at the last sync
	undo   []undoRecord
	// written counts the bytes written since the last sync.
	written int64
}

type undoRecord struct {
	off int64
	old []byte // the bytes the write overwrote (short of the write if it grew the file)
}

// Mount serves backing at mountpoint (both must exist) until Unmount.
func Mount(backing, mountpoint string) (*FS, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("faultfs: mounting needs root")
	}
	f := &FS{backing: backing, mountpoint: mountpoint, faults: map[Op]string{}, injected: map[Op]int{},
		journals: map[*fs.Inode]*journal{}}
	lb, err := fs.NewLoopbackRoot(backing)
	if err != nil {
		return nil, fmt.Errorf("faultfs: backing dir: %w", err)
	}
	loop := lb.(*fs.LoopbackNode)
	root := &node{LoopbackNode: loop, fs: f}
	loop.RootData.RootNode = root
	f.root = loop.RootData
	server, err := fs.Mount(mountpoint, root, &fs.Options{
		MountOptions: fuse.MountOptions{DirectMount: true, FsName: "faultfs", Name: "faultfs"},
	})
	if err != nil {
		return nil, fmt.Errorf("faultfs: mount %s: %w", mountpoint, err)
	}
	f.server = server
	return f, nil
}

// Unmount unmounts the filesystem (lazily if a file is still open) and
// stops serving it.
func (f *FS) Unmount() error {
	if err := f.server.Unmount(); err != nil {
		if err2 := syscall.Unmount(f.mountpoint, syscall.MNT_DETACH); err2 != nil {
			return fmt.Errorf("faultfs: unmount %s: %w (lazy: %w)", f.mountpoint, err, err2)
		}
	}
	f.server.Wait()
	return nil
}

// Fail arms a fault: from now on every op on a file whose path (relative
// to the mount) contains part fails with EIO, until Heal.
func (f *FS) Fail(op Op, part string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults[op] = part
}

// Heal disarms every fault.
func (f *FS) Heal() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.faults)
}

// Injected is how many times op has failed so far.
func (f *FS) Injected(op Op) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.injected[op]
}

// LoseUnsynced undoes every write not yet synced, in every file, as a
// power cut would. Call it with the writing process stopped.
func (f *FS) LoseUnsynced() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var errs []error
	for ino, j := range f.journals {
		delete(f.journals, ino)
		if len(j.undo) == 0 {
			continue // synced since its last write: nothing to undo
		}
		// The file where it is now: it may have been renamed since its
		// last write. One removed since has nothing left to lose.
		if _, parent := ino.Parent(); parent == nil {
			continue
		}
		j.path = filepath.Join(f.root.Path, ino.Path(nil))
		if err := j.rollback(); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Unsynced reports what LoseUnsynced would undo now: the files written
// since their last sync and the bytes written to them since.
func (f *FS) Unsynced() (files int, bytes int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, j := range f.journals {
		if len(j.undo) > 0 {
			files++
			bytes += j.written
		}
	}
	return files, bytes
}

// fails reports (and counts) whether op on rel must fail now.
func (f *FS) fails(op Op, rel string) bool {
	part, armed := f.faults[op]
	if !armed || !strings.Contains(rel, part) {
		return false
	}
	f.injected[op]++
	return true
}

// rollback restores the backing file to its content at the last sync.
func (j *journal) rollback() error {
	file, err := os.OpenFile(j.path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("faultfs: roll back %s: %w", j.path, err)
	}
	defer file.Close()
	for i := len(j.undo) - 1; i >= 0; i-- {
		if _, err := file.WriteAt(j.undo[i].old, j.undo[i].off); err != nil {
			return fmt.Errorf("faultfs: roll back %s: %w", j.path, err)
		}
	}
	if err := file.Truncate(j.synced); err != nil {
		return fmt.Errorf("faultfs: roll back %s: %w", j.path, err)
	}
	j.undo, j.written = nil, 0
	return nil
}

// node is a loopback node whose open files are wrapped; so are its
// children's (WrapChild).
type node struct {
	*fs.LoopbackNode
	fs *FS
}

var (
	_ fs.NodeOpener      = (*node)(nil)
	_ fs.NodeCreater     = (*node)(nil)
	_ fs.NodeWrapChilder = (*node)(nil)
)

func (n *node) WrapChild(_ context.Context, ops fs.InodeEmbedder) fs.InodeEmbedder {
	if lb, ok := ops.(*fs.LoopbackNode); ok {
		return &node{LoopbackNode: lb, fs: n.fs}
	}
	return ops
}

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, fuseFlags, errno := n.LoopbackNode.Open(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	return n.wrap(n.EmbeddedInode(), fh), fuseFlags, 0
}

func (n *node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	ino, fh, fuseFlags, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	return ino, n.wrap(ino, fh), fuseFlags, 0
}

func (n *node) wrap(ino *fs.Inode, fh fs.FileHandle) fs.FileHandle {
	return &file{lf: fh.(*fs.LoopbackFile), fs: n.fs, ino: ino, root: n.RootData}
}

// file forwards to the loopback file, journaling writes and failing the
// armed faults. It does not offer the loopback file's passthrough fd: the
// kernel would write to the backing file past it.
type file struct {
	lf   *fs.LoopbackFile
	fs   *FS
	ino  *fs.Inode
	root *fs.LoopbackRoot
}

var (
	_ fs.FileReader    = (*file)(nil)
	_ fs.FileWriter    = (*file)(nil)
	_ fs.FileWritever  = (*file)(nil)
	_ fs.FileFsyncer   = (*file)(nil)
	_ fs.FileReleaser  = (*file)(nil)
	_ fs.FileFlusher   = (*file)(nil)
	_ fs.FileGetattrer = (*file)(nil)
	_ fs.FileSetattrer = (*file)(nil)
	_ fs.FileLseeker   = (*file)(nil)
	_ fs.FileAllocater = (*file)(nil)
	_ fs.FileGetlker   = (*file)(nil)
	_ fs.FileSetlker   = (*file)(nil)
	_ fs.FileSetlkwer  = (*file)(nil)
)

// rel is the file's path under the mount; abs its backing path.
func (h *file) rel() string { return h.ino.Path(nil) }
func (h *file) abs() string { return filepath.Join(h.root.Path, h.rel()) }

func (h *file) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if h.fs.fails(Write, h.rel()) {
		return 0, syscall.EIO
	}
	if err := h.journal(off, int64(len(data))); err != nil {
		return 0, fs.ToErrno(err)
	}
	return h.lf.Write(ctx, data, off)
}

func (h *file) Writev(ctx context.Context, data [][]byte, off int64) (uint32, syscall.Errno) {
	var all []byte
	for _, d := range data {
		all = append(all, d...)
	}
	return h.Write(ctx, all, off)
}

// journal records what a write of n bytes at off will overwrite. Called
// with fs.mu held.
func (h *file) journal(off, n int64) error {
	path := h.abs()
	j := h.fs.journals[h.ino]
	if j == nil {
		st, err := os.Stat(path)
		if err != nil {
			return err
		}
		j = &journal{synced: st.Size()}
		h.fs.journals[h.ino] = j
	}
	j.path = path
	r, err := os.Open(path)
	if err != nil {
		return err
	}
	defer r.Close()
	old := make([]byte, n)
	got, err := r.ReadAt(old, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	j.undo = append(j.undo, undoRecord{off: off, old: old[:got]})
	j.written += n
	return nil
}

func (h *file) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	j := h.fs.journals[h.ino]
	if h.fs.fails(Fsync, h.rel()) {
		if j != nil {
			// The kernel's writeback failed: the pages are gone.
			j.path = h.abs()
			if err := j.rollback(); err != nil {
				return fs.ToErrno(err)
			}
		}
		return syscall.EIO
	}
	if errno := h.lf.Fsync(ctx, flags); errno != 0 {
		return errno
	}
	if j != nil {
		st, err := os.Stat(j.path)
		if err != nil {
			return fs.ToErrno(err)
		}
		j.synced, j.undo, j.written = st.Size(), nil, 0
	}
	return 0
}

func (h *file) Read(ctx context.Context, buf []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	return h.lf.Read(ctx, buf, off)
}
func (h *file) Release(ctx context.Context) syscall.Errno { return h.lf.Release(ctx) }
func (h *file) Flush(ctx context.Context) syscall.Errno   { return h.lf.Flush(ctx) }
func (h *file) Getattr(ctx context.Context, out *fuse.AttrOut) syscall.Errno {
	return h.lf.Getattr(ctx, out)
}
func (h *file) Setattr(ctx context.Context, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	return h.lf.Setattr(ctx, in, out)
}
func (h *file) Lseek(ctx context.Context, off uint64, whence uint32) (uint64, syscall.Errno) {
	return h.lf.Lseek(ctx, off, whence)
}
func (h *file) Allocate(ctx context.Context, off, size uint64, mode uint32) syscall.Errno {
	return h.lf.Allocate(ctx, off, size, mode)
}
func (h *file) Getlk(ctx context.Context, owner uint64, lk *fuse.FileLock, flags uint32, out *fuse.FileLock) syscall.Errno {
	return h.lf.Getlk(ctx, owner, lk, flags, out)
}
func (h *file) Setlk(ctx context.Context, owner uint64, lk *fuse.FileLock, flags uint32) syscall.Errno {
	return h.lf.Setlk(ctx, owner, lk, flags)
}
func (h *file) Setlkw(ctx context.Context, owner uint64, lk *fuse.FileLock, flags uint32) syscall.Errno {
	return h.lf.Setlkw(ctx, owner, lk, flags)
}
