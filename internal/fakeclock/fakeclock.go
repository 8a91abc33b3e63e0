// Package fakeclock is a clock.Clock for tests: time moves only when the
// test calls Advance, and a test waits for a loop to arm its timers with
// BlockUntil instead of sleeping.
package fakeclock

import (
	"sync"
	"time"

	"github.com/metad/metad/clock"
)

// Clock is a manual clock.Clock.
type Clock struct {
	mu      sync.Mutex
	now     time.Time
	timers  map[*timer]bool // armed timers
	changed chan struct{}   // closed and replaced whenever timers change
}

// New returns a clock reading start.
func New(start time.Time) *Clock {
	return &Clock{now: start, timers: map[*timer]bool{}, changed: make(chan struct{})}
}

// Now implements clock.Clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer implements clock.Clock.
func (c *Clock) NewTimer(d time.Duration) clock.Timer {
	t := &timer{c: c, ch: make(chan time.Time, 1)}
	t.Reset(d)
	return t
}

// Advance moves time forward by d and fires every timer that falls due.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for t := range c.timers {
		if !t.at.After(c.now) {
			delete(c.timers, t)
			select {
			case t.ch <- c.now:
			default:
			}
		}
	}
	c.notify()
}

// BlockUntil waits until n timers are armed (created or reset, and not yet
// fired or stopped): the loop under test is then waiting on the clock.
func (c *Clock) BlockUntil(n int) {
	for {
		c.mu.Lock()
		armed, changed := len(c.timers), c.changed
		c.mu.Unlock()
		if armed >= n {
			return
		}
		<-changed
	}
}

func (c *Clock) notify() {
	close(c.changed)
	c.changed = make(chan struct{})
}

type timer struct {
	c  *Clock
	ch chan time.Time
	at time.Time
}

func (t *timer) C() <-chan time.Time { return t.ch }

func (t *timer) Reset(d time.Duration) {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	t.at = t.c.now.Add(d)
	if d <= 0 {
		delete(t.c.timers, t)
		select {
		case t.ch <- t.c.now:
		default:
		}
	} else {
		t.c.timers[t] = true
	}
	t.c.notify()
}

func (t *timer) Stop() {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	delete(t.c.timers, t)
	t.c.notify()
}
