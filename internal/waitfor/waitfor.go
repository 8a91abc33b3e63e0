// Package waitfor is the tests' one wait on a condition another goroutine or
// process makes true: it polls the condition until it holds, and fails the
// test when a generous bound passes. The bound catches a hang; it does not
// measure speed, so a slow machine makes a test slower, not red. Tests use
// it instead of sleeping: a sleep guesses how long the other side takes, a
// poll asks.
package waitfor

import (
	"testing"
	"time"

	"github.com/metad/metad/clock"
)

// Poll is how often a condition is asked again.
const Poll = 20 * time.Millisecond

// Cond polls cond until it returns nil, failing t with what and cond's last
// error once timeout has passed on the wall clock.
func Cond(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	if err := Until(timeout, cond); err != nil {
		t.Fatalf("%s: still not true after %v: %v", what, timeout, err)
	}
}

// Until polls cond until it returns nil (Until then returns nil) or timeout
// passes (it returns cond's last error), for callers that are not tests'
// main goroutines.
func Until(timeout time.Duration, cond func() error) error {
	deadline := clock.Real.Now().Add(timeout)
	for {
		err := cond()
		if err == nil || clock.Real.Now().After(deadline) {
			return err
		}
		<-clock.After(clock.Real, Poll)
	}
}
