package node

import (
	"fmt"
	"io"
	"testing"
	"time"
)

// A refused handshake is logged at most once per refusalLogEvery; the
// next line counts the ones left out.
func TestRefusalLimiterLogsOncePerInterval(t *testing.T) {
	var l refusalLimiter
	t0 := time.Unix(1000, 0)
	steps := []struct {
		at             time.Duration
		log            bool
		suppressedWant int
	}{
		{0, true, 0},
		{refusalLogEvery / 2, false, 0},
		{refusalLogEvery - time.Nanosecond, false, 0},
		{refusalLogEvery, true, 2},
		{refusalLogEvery + 1, false, 0},
		{3 * refusalLogEvery, true, 1},
	}
	for i, s := range steps {
		ok, n := l.allow(t0.Add(s.at))
		if ok != s.log || n != s.suppressedWant {
			t.Errorf("step %d (+%v): allow = %v, %d; want %v, %d", i, s.at, ok, n, s.log, s.suppressedWant)
		}
	}
}

// A connection closed before any TLS record (a TCP probe) is not a
// refusal worth a WARN.
func TestHandshakeRefusalIgnoresProbes(t *testing.T) {
	if why := handshakeRefusal(fmt.Errorf("read: %w", io.EOF)); why != "" {
		t.Errorf("EOF: %q, want nothing to report", why)
	}
	if why := handshakeRefusal(io.ErrUnexpectedEOF); why == "" {
		t.Error("a handshake cut short is a refusal")
	}
}
