package readpath

import (
	"context"
	"sync"
	"time"

	"github.com/metad/metad/clock"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/fsmpb"
	"github.com/metad/metad/resolver"
)

// maxLeases bounds the shared pins a node remembers.
const maxLeases = 1 << 16

// SharedHolder is the holder of every shared pin. No client may take a pin
// under it or release one held by it: other readers depend on a shared pin
// until it expires.
const SharedHolder = "resolve/shared"

// leases coalesces the pins of concurrent resolves (G9): rather
// than one Raft write per resolve, a node takes one pin per object with
// twice the resolve TTL and hands it to every resolve that can still finish
// its read inside it. G9 holds because every reader's window (its send time
// plus the resolve TTL, on its own clock) ends before the shared pin's: a
// lease is offered only while at least the resolve TTL plus a margin of it
// remains, measured on this node's monotonic clock from before the pin was
// proposed. G7 holds because the pin is committed, unexpired and never
// released (ReleasePin refuses shared pins), and the resolve rechecks after
// taking it unless the pin was already committed in the state it planned
// from.
type leases struct {
	margin time.Duration
	now    func() time.Time

	mu sync.Mutex
	// Invariant: every entry's pin is committed and its until is no later
	// than its expiry in real time.
	byObject map[fsm.ObjectRef]lease
}

type lease struct {
	pin   resolver.Pin
	until time.Time // local monotonic bound on the pin's life
}

func newLeases(margin time.Duration, c clock.Clock) *leases {
	return &leases{margin: margin, now: c.Now, byObject: map[fsm.ObjectRef]lease{}}
}

// get returns a shared pin on obj that outlives a reader who starts now
// and reads for ttl.
func (l *leases) get(obj fsm.ObjectRef, ttl time.Duration) (resolver.Pin, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	le, ok := l.byObject[obj]
	if !ok || l.now().Add(ttl+l.margin).After(le.until) {
		return resolver.Pin{}, false
	}
	return le.pin, true
}

// put remembers a pin proposed at sent with lifetime ttl.
func (l *leases) put(obj fsm.ObjectRef, pin resolver.Pin, sent time.Time, ttl time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.byObject) >= maxLeases {
		now := l.now()
		for k, le := range l.byObject {
			if le.until.Before(now) {
				delete(l.byObject, k)
			}
		}
		if len(l.byObject) >= maxLeases {
			return // full of live leases: this one is simply not shared
		}
	}
	l.byObject[obj] = lease{pin: pin, until: sent.Add(ttl)}
}

// sharedPin takes a pin for a resolve: a live shared lease if there is
// one, else a new pin of twice the resolve TTL, which later resolves share.
func (p pinner) sharedPin(ctx context.Context, obj fsm.ObjectRef, ttl time.Duration) (resolver.Pin, error) {
	if pin, ok := p.leases.get(obj, ttl); ok {
		return pin, nil
	}
	life := min(2*ttl, fsm.MaxPinTTL)
	sent := p.leases.now()
	res, err := p.propose(ctx, &fsmpb.Command{Op: &fsmpb.Command_PinObject{PinObject: &fsmpb.PinObject{
		Object: obj.PB(), Holder: SharedHolder, TtlNanos: int64(life),
	}}})
	if err != nil {
		return resolver.Pin{}, err
	}
	if rej := res.Rejection; rej != nil {
		return resolver.Pin{}, pinRefused(rej)
	}
	pin := resolver.Pin{ID: res.PinId, Expiry: time.Unix(0, res.PinExpiryUnixNano), Shared: true}
	p.leases.put(obj, pin, sent, life)
	return pin, nil
}
