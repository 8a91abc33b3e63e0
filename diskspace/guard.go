package diskspace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/metad/metad/clock"
)

// ErrDiskFull matches every *FullError.
var ErrDiskFull = errors.New("disk full")

// FullError is a write refused because the data dir's filesystem is below
// its reserve.
type FullError struct {
	Dir     string
	Free    uint64 // bytes free at the last check
	Total   uint64
	Reserve uint64
}

func (e *FullError) Error() string {
	return fmt.Sprintf("disk full: the filesystem of data dir %s has %s free of %s, below the %s reserve (--disk-reserve); "+
		"writes that grow the state are refused until space is freed", e.Dir, Bytes(e.Free), Bytes(e.Total), Bytes(e.Reserve))
}

// Is makes errors.Is(err, ErrDiskFull) true.
func (e *FullError) Is(target error) bool { return target == ErrDiskFull }

// Usage is a filesystem's space in bytes.
type Usage struct {
	Free  uint64 // what an unprivileged writer may still use
	Total uint64
}

// Config is a Guard's settings.
type Config struct {
	// Dir is the data dir whose filesystem is watched.
	Dir string
	// Reserve: below this many free bytes, growth is refused. 0 disables
	// the guard.
	Reserve uint64
	// Interval is the time between checks. Default 1s.
	Interval time.Duration
}

// DefaultReserve is Reserve's default: two raft-wal segments (64 MiB
// each, preallocated when opened), so that the small entries reads need
// still find a segment to go to.
const DefaultReserve = 128 << 20

// Guard is one data dir's watch.
type Guard struct {
	cfg    Config
	clock  clock.Clock
	statfs func(dir string) (Usage, error)
	log    *slog.Logger

	mu    sync.Mutex
	state State
}

// State is the last check's verdict.
type State struct {
	Usage
	Low     bool
	Checked time.Time // zero before the first check
	Err     error     // the last check's failure, nil if it succeeded
}

// Option configures a Guard.
type Option func(*Guard)

// WithClock sets the clock (default clock.Real).
func WithClock(c clock.Clock) Option { return func(g *Guard) { g.clock = c } }

// WithStatfs replaces the filesystem query (tests).
func WithStatfs(f func(dir string) (Usage, error)) Option { return func(g *Guard) { g.statfs = f } }

// New returns a guard for cfg.Dir, checked once before it returns so that
// a node starting on a full disk refuses growth from its first request.
func New(cfg Config, log *slog.Logger, opts ...Option) *Guard {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	g := &Guard{cfg: cfg, clock: clock.Real, statfs: statfs, log: log}
	for _, o := range opts {
		o(g)
	}
	g.Check()
	return g
}

// Check queries the filesystem now and updates the verdict, logging a
// change of it.
func (g *Guard) Check() State {
	u, err := g.statfs(g.cfg.Dir)
	g.mu.Lock()
	defer g.mu.Unlock()
	was := g.state
	g.state.Checked, g.state.Err = g.clock.Now(), err
	if err != nil {
		if was.Err == nil {
			g.log.Warn("disk space check failed; keeping the last verdict", "data_dir", g.cfg.Dir, "err", err)
		}
		return g.state
	}
	g.state.Usage, g.state.Low = u, low(u, g.cfg.Reserve)
	switch {
	case g.state.Low && !was.Low:
		g.log.Error("disk space below the reserve: refusing writes that grow the state until space is freed",
			"data_dir", g.cfg.Dir, "free", Bytes(u.Free), "total", Bytes(u.Total), "reserve", Bytes(g.cfg.Reserve))
	case !g.state.Low && was.Low:
		g.log.Info("disk space back above the reserve: writes accepted again",
			"data_dir", g.cfg.Dir, "free", Bytes(u.Free), "reserve", Bytes(g.cfg.Reserve))
	}
	return g.state
}

// low is the rule: fewer than reserve bytes free.
func low(u Usage, reserve uint64) bool { return reserve > 0 && u.Free < reserve }

// State returns the last check's verdict.
func (g *Guard) State() State {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.state
}

// Refuse returns a *FullError while the filesystem is below its reserve,
// nil otherwise. It reads the last verdict: it costs a lock, never a
// system call.
func (g *Guard) Refuse() error {
	if g == nil {
		return nil
	}
	st := g.State()
	if !st.Low {
		return nil
	}
	return &FullError{Dir: g.cfg.Dir, Free: st.Free, Total: st.Total, Reserve: g.cfg.Reserve}
}

// Describe is the verdict for people: "" while space is fine.
func (g *Guard) Describe() string {
	if err := g.Refuse(); err != nil {
		return err.Error()
	}
	return ""
}

// Run checks every Interval until ctx ends.
func (g *Guard) Run(ctx context.Context) {
	clock.Every(ctx, g.clock, g.cfg.Interval, func() bool { g.Check(); return true })
}

// Bytes formats n in binary units for messages.
func Bytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}
