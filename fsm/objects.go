package fsm

import (
	"math"
	"time"

	"github.com/metad/metad/fsm/fsmpb"
)

// object is one registry entry, keyed by object key. It holds the identity
// of the bytes currently stored under the key.
type object struct {
	ref ObjectRef
	// target is ref as records and evidence name it, shared by all of them
	// (index.go). Registering new bytes under the key makes a new target;
	// records of the old bytes keep the old one.
	// Invariant: target.ref == ref and target.survivors is empty.
	target  *target
	size    uint64
	status  ObjectStatus
	version uint64
	// refs counts evidence entries and records of live generations naming
	// this key, whatever identity they name: a record of replaced bytes
	// keeps the key from being collected until the record itself goes,
	// which is conservative, never unsafe.
	// Invariant: equals the count recomputed from streams.
	refs uint64
	// idleSince is the machine time refs last became zero, or registration.
	idleSince int64
	// pins counts unpruned pins; pinMaxExpiry is the latest expiry of any
	// pin ever taken. Pins are refused once DELETING, so from then on
	// pinMaxExpiry only bounds pins that already exist.
	// Invariant: pins equals the number of entries in Machine.pins naming
	// this key.
	pins         uint64
	pinMaxExpiry int64
}

func objectLess(a, b object) bool { return a.ref.Key < b.ref.Key }

func (o object) info() ObjectInfo {
	return ObjectInfo{
		Ref: o.ref, Size: o.size, Status: o.status, Version: o.version,
		References: o.refs, IdleSince: o.idleSince, Pins: o.pins, PinMaxExpiry: o.pinMaxExpiry,
	}
}

// pin is a lease on (object, identity) that garbage collection honours.
type pin struct {
	id      uint64
	object  ObjectRef
	holder  string
	ttl     int64
	expiry  int64
	version uint64
}

func pinLess(a, b pin) bool { return a.id < b.id }

// pruneAt is the machine time at which the pin is forgotten.
func (p pin) pruneAt() int64 { return addSaturated(p.expiry, int64(PinGrace)) }

// addSaturated returns a+b for b >= 0, or math.MaxInt64 if that overflows.
// Machine time comes from stamps, so a leader with a wild clock can put it
// anywhere; an expiry must then stay in the future, not wrap into the past.
func addSaturated(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func (p pin) info() PinInfo {
	return PinInfo{ID: p.id, Object: p.object, Holder: p.holder, TTL: p.ttl, Expiry: p.expiry, Version: p.version}
}

// pinDeadline orders pins by the machine time at which they are pruned.
type pinDeadline struct {
	at int64
	id uint64
}

func pinDeadlineLess(a, b pinDeadline) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.id < b.id
}

func (m *Machine) getObject(key string) (object, bool) {
	return m.objects.Get(object{ref: ObjectRef{Key: key}})
}

// liveObject returns the registry entry for ref if it is LIVE under the same
// identity, or the refusal that says why not. References may only be added
// to live objects: that is what lets GC delete an unreferenced DELETING one.
func (m *Machine) liveObject(index uint64, ref ObjectRef, field string) (object, *fsmpb.Result) {
	o, ok := m.getObject(ref.Key)
	switch {
	case !ok:
		return o, reject(index, fsmpb.RejectCode_OBJECT_NOT_REGISTERED, field+".key",
			"object %q is not registered", ref.Key)
	case o.status != ObjectLive:
		return o, reject(index, fsmpb.RejectCode_OBJECT_NOT_LIVE, field+".key",
			"object %q is %s", ref.Key, o.status)
	case o.ref.Identity != ref.Identity:
		return o, reject(index, fsmpb.RejectCode_IDENTITY_MISMATCH, field+".identity",
			"object %q holds identity %q, not %q", ref.Key, o.ref.Identity, ref.Identity)
	}
	return o, nil
}

// insideObject refuses, from feature level 2 on, a byte range that does
// not lie inside the object's registered size: a target naming it would
// send readers to bytes that do not exist. At level 1 such ranges were
// accepted, and replaying a level-1 log must decide as it did then.
func (m *Machine) insideObject(index uint64, o object, b ByteRange, field string) *fsmpb.Result {
	if m.Level() < 2 || (b.Offset <= o.size && b.Length <= o.size-b.Offset) {
		return nil
	}
	return reject(index, fsmpb.RejectCode_INVALID_ARGUMENT, field,
		"bytes [%d, %d+%d) lie outside object %q, registered with %d bytes", b.Offset, b.Offset, b.Length, o.ref.Key, o.size)
}

func (m *Machine) addReference(key string) {
	o, ok := m.getObject(key)
	if !ok {
		panic("fsm: reference to unregistered object " + key)
	}
	o.refs++
	m.objects.ReplaceOrInsert(o)
}

func (m *Machine) dropReference(key string) {
	o, ok := m.getObject(key)
	if !ok || o.refs == 0 {
		panic("fsm: dropping a reference that was never counted: " + key)
	}
	o.refs--
	if o.refs == 0 {
		o.idleSince = m.clock
	}
	m.objects.ReplaceOrInsert(o)
}

// registerObject records the identity of the bytes under a key. The same
// identity again is a no-op. New bytes under a live key replace the identity:
// records of the old bytes then fail their identity check, which is how a
// replaced object is detected rather than served.
func (m *Machine) registerObject(index uint64, c *fsmpb.RegisterObject) *fsmpb.Result {
	ref := refOf(c.Object)
	o, ok := m.getObject(ref.Key)
	switch {
	case !ok:
		o = object{ref: ref, target: &target{ref: ref}, idleSince: m.clock}
	case o.status == ObjectDeleting:
		return reject(index, fsmpb.RejectCode_OBJECT_NOT_LIVE, "object.key",
			"object %q is being deleted; register it again once it is DELETED", ref.Key)
	case o.status == ObjectLive && o.ref.Identity == ref.Identity:
		if o.size != c.Size {
			return reject(index, fsmpb.RejectCode_INVALID_ARGUMENT, "size",
				"object %q is registered with size %d, not %d", ref.Key, o.size, c.Size)
		}
		return &fsmpb.Result{Version: index}
	default:
		// A new identity for a live key, or a deleted key registered again.
		o.ref, o.target = ref, &target{ref: ref}
		if o.refs == 0 {
			o.idleSince = m.clock
		}
	}
	o.size = c.Size
	o.status = ObjectLive
	o.version = index
	m.objects.ReplaceOrInsert(o)
	return &fsmpb.Result{Version: index}
}

func (m *Machine) pinObject(index uint64, c *fsmpb.PinObject) *fsmpb.Result {
	o, rej := m.liveObject(index, refOf(c.Object), "object")
	if rej != nil {
		return rej
	}
	p := pin{
		id: m.nextPinID, object: o.ref, holder: c.Holder,
		ttl: c.TtlNanos, expiry: addSaturated(m.clock, c.TtlNanos), version: index,
	}
	m.nextPinID++
	m.pins.ReplaceOrInsert(p)
	m.pinExpiry.ReplaceOrInsert(pinDeadline{at: p.pruneAt(), id: p.id})
	o.pins++
	o.pinMaxExpiry = max(o.pinMaxExpiry, p.expiry)
	m.objects.ReplaceOrInsert(o)
	return &fsmpb.Result{Version: index, PinId: p.id, PinExpiryUnixNano: p.expiry}
}

func (m *Machine) releasePin(index uint64, c *fsmpb.ReleasePin) *fsmpb.Result {
	p, ok := m.pins.Get(pin{id: c.PinId})
	if !ok {
		return reject(index, fsmpb.RejectCode_PIN_NOT_FOUND, "pin_id",
			"pin %d does not exist (released, or expired more than %s ago)", c.PinId, PinGrace)
	}
	m.dropPin(p)
	return &fsmpb.Result{Version: index, PinId: p.id}
}

func (m *Machine) dropPin(p pin) {
	m.pins.Delete(p)
	m.pinExpiry.Delete(pinDeadline{at: p.pruneAt(), id: p.id})
	o, ok := m.getObject(p.object.Key)
	if !ok || o.pins == 0 {
		panic("fsm: pin on an object that does not count it: " + p.object.Key)
	}
	o.pins--
	m.objects.ReplaceOrInsert(o)
}

// pruneExpiredPins forgets pins that expired more than PinGrace ago.
func (m *Machine) pruneExpiredPins() {
	for {
		d, ok := m.pinExpiry.Min()
		if !ok || d.at > m.clock {
			return
		}
		p, _ := m.pins.Get(pin{id: d.id})
		m.dropPin(p)
	}
}

// markObjectDeleting is GC's first phase: an unreferenced live object stops
// accepting pins and references. The physical delete may follow once every
// earlier pin has ended.
func (m *Machine) markObjectDeleting(index uint64, c *fsmpb.MarkObjectDeleting) *fsmpb.Result {
	o, rej := m.liveObject(index, refOf(c.Object), "object")
	if rej != nil {
		return rej
	}
	if o.refs > 0 {
		return reject(index, fsmpb.RejectCode_OBJECT_REFERENCED, "object.key",
			"object %q is still referenced %d times", o.ref.Key, o.refs)
	}
	o.status = ObjectDeleting
	o.version = index
	m.objects.ReplaceOrInsert(o)
	return &fsmpb.Result{Version: index}
}

// markObjectDeleted is GC's last phase, committed after the physical delete.
// It re-checks what GC checked before deleting, so a GC bug is refused here
// instead of recorded.
func (m *Machine) markObjectDeleted(index uint64, c *fsmpb.MarkObjectDeleted) *fsmpb.Result {
	ref := refOf(c.Object)
	o, ok := m.getObject(ref.Key)
	switch {
	case !ok:
		return reject(index, fsmpb.RejectCode_OBJECT_NOT_REGISTERED, "object.key", "object %q is not registered", ref.Key)
	case o.ref.Identity != ref.Identity:
		return reject(index, fsmpb.RejectCode_IDENTITY_MISMATCH, "object.identity",
			"object %q holds identity %q, not %q", ref.Key, o.ref.Identity, ref.Identity)
	case o.status == ObjectDeleted:
		return &fsmpb.Result{Version: index}
	case o.status != ObjectDeleting:
		return reject(index, fsmpb.RejectCode_OBJECT_NOT_LIVE, "object.key",
			"object %q is %s; only a DELETING object can become DELETED", ref.Key, o.status)
	case o.pins > 0 && o.pinMaxExpiry > m.clock:
		return reject(index, fsmpb.RejectCode_OBJECT_PINNED, "object.key",
			"object %q has %d pins, the last expiring in %s", ref.Key, o.pins, time.Duration(o.pinMaxExpiry-m.clock))
	}
	o.status = ObjectDeleted
	o.version = index
	m.objects.ReplaceOrInsert(o)
	return &fsmpb.Result{Version: index}
}
