// Package clock is metad's one time source: an interface, so that tests
// drive time themselves instead of sleeping (internal/fakeclock), and Real,
// the wall clock. Like raft-autopilot's TimeProvider, it is the only way
// any other package of metad learns the time or waits — every background
// loop (membership, repair, gc, readpath, watch, backup, raftstore, node,
// client), and the harness and load drivers too, on Real; the architecture
// test (TestLoopsReadTimeThroughClock, over every package) and the
// forbidigo lint rule keep direct reads of the time package out of them.
// The resolver, a pure core, is handed a Clock and never names Real.
package clock

import (
	"context"
	"time"
)

// Clock tells the time and makes timers.
type Clock interface {
	Now() time.Time
	NewTimer(d time.Duration) Timer
}

// Timer is a one-shot timer, like *time.Timer.
type Timer interface {
	// C delivers the time once the timer fires.
	C() <-chan time.Time
	// Reset makes the timer fire d from now (after a Stop or a fire).
	Reset(d time.Duration)
	// Stop prevents a pending fire.
	Stop()
}

// Every runs step at once, then again d after each run began (on c),
// until step returns false or ctx ends: the one shape of metad's polling
// loops. Runs never overlap; a step that takes longer than d is followed
// by the next at once.
func Every(ctx context.Context, c Clock, d time.Duration, step func() bool) {
	t := c.NewTimer(d)
	defer t.Stop()
	for step() {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			t.Reset(d)
		}
	}
}

// After returns a channel that delivers c's time once d has passed on c,
// like time.After.
func After(c Clock, d time.Duration) <-chan time.Time { return c.NewTimer(d).C() }

// Since is the time passed on c since t, like time.Since.
func Since(c Clock, t time.Time) time.Duration { return c.Now().Sub(t) }

// Real is the wall clock.
var Real Clock = realClock{}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time   { return r.t.C }
func (r realTimer) Reset(d time.Duration) { r.t.Reset(d) }
func (r realTimer) Stop()                 { r.t.Stop() }
