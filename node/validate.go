package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"

	"github.com/metad/metad/objectstore"
	"github.com/metad/metad/raftstore"
)

// Validate checks everything Start would refuse before it claims the data
// dir, and writes nothing (metad server --validate): the ports (bound and
// let go), the security files (certificates, CA bundle, tokens, gossip
// keys, peer secret), the object store (an s3:// bucket reachable and
// versioned; a file:// directory writable or creatable) and, if the data
// dir exists, that no other process holds it and that its raft log is in
// the log store the settings ask for. Every problem is reported at once,
// wrapped in ErrBadSetting: the settings do not make a server that starts.
func Validate(cfg Config, log *slog.Logger) error {
	n := &Server{cfg: cfg, log: log}
	defer func() { _ = n.closeParts() }()
	var errs []error
	if err := n.preflight(); err != nil {
		errs = append(errs, err)
	}
	if err := n.loadSecurity(&cfg); err != nil {
		errs = append(errs, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), objectStoreCheckTimeout)
	defer cancel()
	if err := objectstore.CheckConfig(ctx, cfg.Objects); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", objectStoreSetting(cfg), err))
	}
	if err := dataDirFree(cfg.DataDir); err != nil {
		errs = append(errs, err)
	}
	if err := raftstore.CheckLogStore(cfg.Raft.DataDir, cfg.Raft.LogStore); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrBadSetting, errors.Join(errs...))
	}
	return nil
}

// dataDirFree reports a data dir another process holds, without creating
// or writing anything: an existing LOCK file is locked and let go at once.
func dataDirFree(dir string) error {
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("data-dir: %w", err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return &DataDirInUseError{Dir: dir, Owner: lockOwner(f)}
		}
		return fmt.Errorf("data-dir: lock: %w", err)
	}
	return syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}
