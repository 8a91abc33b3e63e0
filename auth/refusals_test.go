package auth

import (
	"testing"
	"time"
)

// A refusal is logged at most once per RefusalLogEvery; the next line
// counts the ones left out.
func TestRefusalLimiterLogsOncePerInterval(t *testing.T) {
	var l RefusalLimiter
	t0 := time.Unix(1000, 0)
	steps := []struct {
		at             time.Duration
		log            bool
		suppressedWant int
	}{
		{0, true, 0},
		{RefusalLogEvery / 2, false, 0},
		{RefusalLogEvery - time.Nanosecond, false, 0},
		{RefusalLogEvery, true, 2},
		{RefusalLogEvery + 1, false, 0},
		{3 * RefusalLogEvery, true, 1},
	}
	for i, s := range steps {
		ok, n := l.Allow(t0.Add(s.at))
		if ok != s.log || n != s.suppressedWant {
			t.Errorf("step %d (+%v): Allow = %v, %d; want %v, %d", i, s.at, ok, n, s.log, s.suppressedWant)
		}
	}
}
