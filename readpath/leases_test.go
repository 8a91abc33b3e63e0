package readpath

import (
	"strconv"
	"testing"
	"time"

	"github.com/metad/metad/clock"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/resolver"
)

// TestSharedLeaseOutlivesEveryReader: a shared pin is offered only while a
// reader starting now, reading for the resolve TTL, finishes before the
// pin's local lifetime ends (with the margin to spare).
func TestSharedLeaseOutlivesEveryReader(t *testing.T) {
	now := time.Unix(1000, 0)
	l := newLeases(5*time.Second, clock.Real)
	l.now = func() time.Time { return now }
	obj := fsm.ObjectRef{Key: "k", Identity: "sha256:x"}
	ttl := 30 * time.Second
	if _, ok := l.get(obj, ttl); ok {
		t.Fatal("a lease before any pin")
	}
	l.put(obj, resolver.Pin{ID: 7, Shared: true}, now, 2*ttl) // lives until now+60s
	for _, tc := range []struct {
		after time.Duration
		ok    bool
	}{{0, true}, {24 * time.Second, true}, {25 * time.Second, true}, {25*time.Second + 1, false}, {time.Minute, false}} {
		now = time.Unix(1000, 0).Add(tc.after)
		pin, ok := l.get(obj, ttl)
		if ok != tc.ok || (ok && pin.ID != 7) {
			t.Errorf("%s after the pin: offered %v (%v), want %v", tc.after, ok, pin, tc.ok)
		}
	}
	if _, ok := l.get(fsm.ObjectRef{Key: "k", Identity: "sha256:other"}, ttl); ok {
		t.Fatal("a lease offered for another identity of the key")
	}
}

func TestSharedLeasesAreBounded(t *testing.T) {
	now := time.Unix(0, 0)
	l := newLeases(0, clock.Real)
	l.now = func() time.Time { return now }
	for i := range maxLeases + 10 {
		l.put(fsm.ObjectRef{Key: strconv.Itoa(i), Identity: "i"}, resolver.Pin{ID: uint64(i)}, now, time.Second)
	}
	if len(l.byObject) > maxLeases {
		t.Fatalf("%d leases kept, bound %d", len(l.byObject), maxLeases)
	}
	now = now.Add(2 * time.Second) // all expired: the next put evicts them
	l.put(fsm.ObjectRef{Key: "new", Identity: "i"}, resolver.Pin{ID: 1}, now, time.Second)
	if len(l.byObject) != 1 {
		t.Fatalf("%d leases after expiry, want 1", len(l.byObject))
	}
}
