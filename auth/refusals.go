package auth

import (
	"sync"
	"time"
)

// RefusalLogEvery is the least time between two logged refusals of one
// kind (a TLS handshake, a wrong peer secret): a scanner or a
// misconfigured fleet cannot flood the log, and each line counts the
// refusals left out since the previous one.
const RefusalLogEvery = time.Second

// RefusalLimiter decides which refusals are logged: at most one per
// RefusalLogEvery. Time is an argument, so tests need no clock. The zero
// value is ready to use.
type RefusalLimiter struct {
	mu         sync.Mutex
	last       time.Time // when the last line was logged; zero before the first
	suppressed int       // refusals not logged since then
}

// Allow reports whether the refusal at now is logged and, if so, how many
// were left out before it.
func (l *RefusalLimiter) Allow(now time.Time) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.last.IsZero() && now.Sub(l.last) < RefusalLogEvery {
		l.suppressed++
		return false, 0
	}
	n := l.suppressed
	l.last, l.suppressed = now, 0
	return true, n
}
