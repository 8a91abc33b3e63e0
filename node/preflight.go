package node

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ErrBadSetting wraps a start refused for a setting that names something
// unusable (a security file that is missing, unreadable or malformed):
// bad usage, as a flag that does not parse, and nothing was written.
var ErrBadSetting = errors.New("invalid setting")

// preflight claims the ports the node needs before it writes anything, so
// that a start that cannot succeed leaves the data dir as it found it: the
// gRPC and HTTP listeners are bound (and kept for serving), and the raft
// and gossip ports are checked free (their owners bind them later). Start
// then reads the security files and checks the object store, and only
// then claims the data dir (claimDataDir).
func (n *Server) preflight() error {
	cfg := n.cfg
	var err error
	if n.grpcLis, err = net.Listen("tcp", cfg.GRPCAddr); err != nil {
		return fmt.Errorf("grpc-addr %s: %w", cfg.GRPCAddr, err)
	}
	if cfg.HTTPAddr != "" {
		if n.httpLis, err = net.Listen("tcp", cfg.HTTPAddr); err != nil {
			return fmt.Errorf("http-addr %s: %w", cfg.HTTPAddr, err)
		}
	}
	if err := portFree("raft-addr", cfg.Raft.BindAddr, false); err != nil {
		return err
	}
	return portFree("gossip-addr", cfg.Membership.BindAddr, true)
}

// claimDataDir locks the data dir and stores the node id: the first writes
// of a start, once nothing else can refuse it.
func (n *Server) claimDataDir() (err error) {
	if n.lock, err = LockDataDir(n.cfg.DataDir); err != nil {
		return err
	}
	return StoreNodeID(n.cfg.DataDir, n.cfg.NodeID)
}

// portFree binds addr (TCP, and UDP too for gossip) and lets it go again:
// a busy port fails here, before the data dir is touched, rather than
// after Raft has bootstrapped. Port 0 is always free.
func portFree(flag, addr string, udp bool) error {
	if _, port, err := net.SplitHostPort(addr); err != nil || port == "0" {
		return nil // Validate reports malformed addresses
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%s %s: %w", flag, addr, err)
	}
	_ = l.Close()
	if udp {
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			return fmt.Errorf("%s %s (udp): %w", flag, addr, err)
		}
		_ = pc.Close()
	}
	return nil
}

// ErrDataDirInUse is returned when another process holds the data dir.
var ErrDataDirInUse = errors.New("data dir in use")

// DataDirInUseError names the data dir and who holds it; it matches
// ErrDataDirInUse.
type DataDirInUseError struct {
	Dir   string
	Owner string // "pid N", or "another process" when the LOCK file is empty
}

func (e *DataDirInUseError) Error() string {
	return fmt.Sprintf("data dir %s is in use by %s; stop it first, or give this server its own --data-dir", e.Dir, e.Owner)
}

// Is makes errors.Is(err, ErrDataDirInUse) true.
func (e *DataDirInUseError) Is(target error) bool { return target == ErrDataDirInUse }

// lockFile is the data dir's lock; it holds the owner's pid for the
// message a second server gets.
const lockFile = "LOCK"

// LockDataDir takes an exclusive flock on <dir>/LOCK (creating dir), held
// until the returned file is closed or the process exits: the kernel
// releases it, so a crash never leaves a stale lock. A running server
// holds it; the offline commands (metad data, snapshot restore) take it
// too, so neither can change a data dir under the other.
func LockDataDir(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("data-dir: %w", err)
	}
	path := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("data-dir: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &DataDirInUseError{Dir: dir, Owner: lockOwner(f)}
		}
		return nil, fmt.Errorf("data-dir: lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

func lockOwner(f *os.File) string {
	b := make([]byte, 32)
	k, _ := f.ReadAt(b, 0)
	if pid := strings.TrimSpace(string(b[:k])); pid != "" {
		return "pid " + pid
	}
	return "another process"
}
