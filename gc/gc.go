package gc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/metad/metad/clock"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/fsmpb"
)

// State is the read-only view GC planning needs; *fsm.Machine has it.
type State interface {
	Clock() int64
	// Objects pages the registry's versions in (key, identity) order.
	Objects(after fsm.ObjectRef, limit int) []fsm.ObjectInfo
}

// Store is what the loop needs from Raft.
type Store interface {
	Read(ctx context.Context, fn func(State)) error
	Propose(ctx context.Context, cmd *fsmpb.Command) (*fsmpb.Result, error)
}

// Deleter removes physical bytes by (key, identity); objectstore.Store has it.
type Deleter interface {
	Delete(ctx context.Context, key, identity string) error
}

// Config bounds the collector.
type Config struct {
	// Interval between passes. Default 5s; range [10ms, 1h].
	Interval time.Duration
	// ObjectsPerPass bounds the registry entries one pass examines.
	// Default 1000; range [1, 1<<20].
	ObjectsPerPass int
	// DeletesPerPass bounds physical deletes per pass. Default 100; range [1, 1<<16].
	DeletesPerPass int
	// MinIdle is how long, in machine time, an object must have been
	// unreferenced before GC marks it DELETING: the window in which a
	// writer registers an object and then commits the append naming it.
	// Default 1m; range [0, 24h].
	MinIdle time.Duration
	// SkewMargin is added to every pin lifetime GC waits out, for clock
	// rate differences between holders and the leader. Default 5s; range
	// [0, 10m].
	SkewMargin time.Duration
}

// DefaultConfig returns the defaults documented on Config.
func DefaultConfig() Config {
	return Config{Interval: 5 * time.Second, ObjectsPerPass: 1000, DeletesPerPass: 100, MinIdle: time.Minute, SkewMargin: 5 * time.Second}
}

// Validate reports every out-of-range setting.
func (c Config) Validate() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf("gc: "+format, args...))
		}
	}
	check(c.Interval >= 10*time.Millisecond && c.Interval <= time.Hour, "Interval %s outside [10ms, 1h]", c.Interval)
	check(c.ObjectsPerPass >= 1 && c.ObjectsPerPass <= 1<<20, "ObjectsPerPass %d outside [1, 1048576]", c.ObjectsPerPass)
	check(c.DeletesPerPass >= 1 && c.DeletesPerPass <= 1<<16, "DeletesPerPass %d outside [1, 65536]", c.DeletesPerPass)
	check(c.MinIdle >= 0 && c.MinIdle <= 24*time.Hour, "MinIdle %s outside [0, 24h]", c.MinIdle)
	check(c.SkewMargin >= 0 && c.SkewMargin <= 10*time.Minute, "SkewMargin %s outside [0, 10m]", c.SkewMargin)
	return errors.Join(errs...)
}

// Collector is the leader-only garbage collector (G9).
type Collector struct {
	cfg     Config
	store   Store
	deleter Deleter
	log     *slog.Logger
	clock   clock.Clock // monotonic source for pin waits, and the pass timer
	metrics *metrics
}

// Option adjusts a Collector.
type Option func(*Collector)

// WithClock makes the loop read time and wait through c (default
// clock.Real); tests pass a fake.
func WithClock(c clock.Clock) Option { return func(col *Collector) { col.clock = c } }

// New returns a Collector; call Run on each leadership term.
func New(cfg Config, store Store, deleter Deleter, log *slog.Logger, reg prometheus.Registerer, opts ...Option) (*Collector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Collector{cfg: cfg, store: store, deleter: deleter, log: log, clock: clock.Real, metrics: newMetrics(reg)}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// term is what one leadership term has observed: when it first saw each
// DELETING object that still had pins, and how long it must then wait. It
// starts empty on every new leader, which only ever makes GC wait longer.
type term struct {
	firstSeen map[fsm.ObjectRef]sighting
	cursor    fsm.ObjectRef
}

type sighting struct {
	at   time.Time     // this leader's monotonic clock
	wait time.Duration // how long after at every pin has ended
}

func newTerm() *term { return &term{firstSeen: map[fsm.ObjectRef]sighting{}} }

// Run collects until ctx ends. The caller starts it once this node leads
// (after its barrier) and cancels ctx on step-down.
func (c *Collector) Run(ctx context.Context) {
	t := newTerm()
	c.log.Info("gc started")
	timer := c.clock.NewTimer(c.cfg.Interval)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			c.log.Info("gc stopped")
			return
		case <-timer.C():
			start := c.clock.Now()
			if err := c.pass(ctx, t); err != nil && ctx.Err() == nil {
				c.log.Warn("gc pass failed", "err", err)
			}
			c.metrics.passSeconds.Observe(c.clock.Now().Sub(start).Seconds())
			timer.Reset(c.cfg.Interval)
		}
	}
}

// window is one pass's read of the registry.
type window struct {
	objs []fsm.ObjectInfo
	// machine is the machine time of the read; now is the later of it and
	// this leader's wall clock, what the next command would be stamped with.
	machine, now int64
}

func (c *Collector) read(ctx context.Context, after fsm.ObjectRef) (window, error) {
	var w window
	err := c.store.Read(ctx, func(st State) {
		w.objs, w.machine = st.Objects(after, c.cfg.ObjectsPerPass), st.Clock()
	})
	// Machine time moves only when commands are applied; in a quiet
	// cluster it stands still, so idleness is measured against whichever
	// of it and this leader's clock is later.
	w.now = max(w.machine, c.clock.Now().UnixNano())
	return w, err
}

// pass examines the next ObjectsPerPass registry entries: marks idle,
// unreferenced live objects DELETING, and physically deletes DELETING
// objects whose pins have all ended, then marks them DELETED. Objects it
// marks are read again and, if no pin can still be in force, deleted in
// the same pass: an idle cluster collects within MinIdle and one Interval.
func (c *Collector) pass(ctx context.Context, t *term) error {
	from := t.cursor
	w, err := c.read(ctx, from)
	if err != nil {
		return err
	}
	if len(w.objs) < c.cfg.ObjectsPerPass {
		t.cursor = fsm.ObjectRef{} // wrap around next pass
	} else {
		t.cursor = w.objs[len(w.objs)-1].Ref
	}
	marked := 0
	for _, o := range w.objs {
		if Decide(o, w.now, c.cfg.MinIdle) == MarkDeleting &&
			c.propose(ctx, &fsmpb.Command{Op: &fsmpb.Command_MarkObjectDeleting{MarkObjectDeleting: &fsmpb.MarkObjectDeleting{Object: o.Ref.PB()}}}, "marked DELETING", o) {
			marked++
		}
	}
	if marked > 0 {
		if w, err = c.read(ctx, from); err != nil {
			return err
		}
	}
	deletes, deleting := 0, 0
	for _, o := range w.objs {
		if Decide(o, w.now, c.cfg.MinIdle) != AwaitPins {
			continue
		}
		deleting++
		if deletes < c.cfg.DeletesPerPass && c.pinsEnded(t, o, w.machine) {
			deletes++
			c.delete(ctx, o)
		}
	}
	c.metrics.deleting.Set(float64(deleting))
	if marked+deletes > 0 {
		// One line per pass, not per object: a pass may touch thousands.
		c.log.Info("gc pass", "marked_deleting", marked, "deleted", deletes, "still_deleting", deleting-deletes)
	}
	return nil
}

// pinsEnded reports whether every pin on a DELETING object has ended. Pins
// are refused once DELETING, so none can start later, and none outlives
// PinMaxExpiry. A pin has ended when it is gone from the machine
// (released or pruned), or when machine time of the read is past
// PinMaxExpiry plus SkewMargin, the allowance for holders' clocks: an
// expired pin no longer needs a write to end. Machine time stands still in
// a quiet cluster, so otherwise this leader waits on its own monotonic
// clock for the time machine time still had to run (never more than
// MaxPinTTL plus the margin), which a skewed wall clock cannot shorten.
func (c *Collector) pinsEnded(t *term, o fsm.ObjectInfo, machine int64) bool {
	left := time.Duration(o.PinMaxExpiry-machine) + c.cfg.SkewMargin
	if o.Pins == 0 || left <= 0 {
		delete(t.firstSeen, o.Ref)
		return true
	}
	seen, ok := t.firstSeen[o.Ref]
	if !ok {
		seen = sighting{at: c.clock.Now(), wait: min(left, fsm.MaxPinTTL+c.cfg.SkewMargin)}
		t.firstSeen[o.Ref] = seen
	}
	return c.clock.Now().Sub(seen.at) >= seen.wait
}

// delete removes the bytes, then records DELETED. If the record fails, the
// object stays DELETING (refusing pins and references) and the next pass
// tries again; deleting absent bytes is not an error.
func (c *Collector) delete(ctx context.Context, o fsm.ObjectInfo) {
	if err := c.deleter.Delete(ctx, o.Ref.Key, o.Ref.Identity); err != nil {
		c.log.Warn("gc: physical delete failed", "object", o.Ref.String(), "err", err)
		return
	}
	c.metrics.deletions.Inc()
	_ = c.propose(ctx, &fsmpb.Command{Op: &fsmpb.Command_MarkObjectDeleted{MarkObjectDeleted: &fsmpb.MarkObjectDeleted{Object: o.Ref.PB()}}}, "deleted", o)
}

// propose commits one GC step and reports whether it took effect.
func (c *Collector) propose(ctx context.Context, cmd *fsmpb.Command, what string, o fsm.ObjectInfo) bool {
	res, err := c.store.Propose(ctx, cmd)
	switch {
	case err != nil:
		c.log.Warn("gc: propose failed", "object", o.Ref.String(), "err", err)
	case res.Rejection != nil:
		// Deterministic refusals are expected under races (a reference or
		// a pin arrived first); the next pass decides again.
		c.metrics.refusals.WithLabelValues(res.Rejection.Code.String()).Inc()
		c.log.Debug("gc: refused", "object", o.Ref.String(), "code", res.Rejection.Code, "msg", res.Rejection.Message)
	default:
		c.metrics.marks.WithLabelValues(what).Inc()
		c.log.Debug("gc: object "+what, "object", o.Ref.String(), "version", res.Version)
		return true
	}
	return false
}

// Decision is what GC does with one registry entry.
type Decision int

const (
	Keep Decision = iota
	MarkDeleting
	AwaitPins
)

// Decide is GC's pure planning rule for one object at machine time clock.
func Decide(o fsm.ObjectInfo, clock int64, minIdle time.Duration) Decision {
	switch {
	case o.Status == fsm.ObjectLive && o.References == 0 && clock-o.IdleSince >= int64(minIdle):
		return MarkDeleting
	case o.Status == fsm.ObjectDeleting:
		return AwaitPins
	}
	return Keep
}
