package fsm

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/metad/metad/fsm/fsmpb"
)

// object is one registry entry: one version of an object, named by its
// key and the identity of its bytes.
//
// From feature level 3 the registry holds versions, as a versioned store
// does: registering new bytes under a key adds an entry beside the key's
// others and touches none of them, and each version is referenced, pinned
// and collected on its own. Below level 3 a key has one entry: registering
// new bytes moved it to the new identity, and its counts cover records and
// pins of every identity the key has held (the level's raise splits them,
// splitVersions). counted says which entry counts a reference.
type object struct {
	ref ObjectRef
	// target is ref as records and evidence name it, shared by all of them
	// (index.go). Records of another version keep that version's target.
	// Invariant: target.ref == ref and target.survivors is empty.
	target  *target
	size    uint64
	status  ObjectStatus
	version uint64
	// refs counts evidence entries and records of live generations that
	// this entry counts (counted): those naming this version, or below
	// level 3 this key, whatever identity they name.
	// Invariant: equals the count recomputed from streams.
	refs uint64
	// idleSince is the machine time refs last became zero, or registration.
	idleSince int64
	// pins counts unpruned pins; pinMaxExpiry is the latest expiry of any
	// pin ever taken. Pins are refused once DELETING, so from then on
	// pinMaxExpiry only bounds pins that already exist.
	// Invariant: pins equals the number of entries in Machine.pins this
	// entry counts.
	pins         uint64
	pinMaxExpiry int64
}

// objectLess orders the registry by key, then identity: a key's versions
// are neighbours, and below level 3 (one entry a key) the order is the
// key order earlier releases kept.
func objectLess(a, b object) bool {
	if a.ref.Key != b.ref.Key {
		return a.ref.Key < b.ref.Key
	}
	return a.ref.Identity < b.ref.Identity
}

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

// version returns the registry entry of exactly ref.
func (m *Machine) version(ref ObjectRef) (object, bool) {
	return m.objects.Get(object{ref: ref})
}

// versions calls fn for each entry of key, by identity, until fn returns
// false.
func (m *Machine) versions(key string, fn func(object) bool) {
	m.objects.AscendGreaterOrEqual(object{ref: ObjectRef{Key: key}}, func(o object) bool {
		return o.ref.Key == key && fn(o)
	})
}

// firstVersion returns the key's first entry by identity: below level 3,
// its only one.
func (m *Machine) firstVersion(key string) (object, bool) {
	var first object
	found := false
	m.versions(key, func(o object) bool {
		first, found = o, true
		return false
	})
	return first, found
}

// counted returns the entry that counts references and pins naming ref:
// the version itself from level 3 on; below it, the key's one entry.
func (m *Machine) counted(ref ObjectRef) (object, bool) {
	if m.Level() < versionsLevel {
		return m.firstVersion(ref.Key)
	}
	return m.version(ref)
}

// liveObject returns the registry entry for ref if it is LIVE under the same
// identity, or the refusal that says why not. References may only be added
// to live objects: that is what lets GC delete an unreferenced DELETING one.
func (m *Machine) liveObject(index uint64, ref ObjectRef, field string) (object, *fsmpb.Result) {
	if m.Level() >= versionsLevel {
		o, ok := m.version(ref)
		switch {
		case !ok:
			return o, m.noSuchVersion(index, ref, field)
		case o.status != ObjectLive:
			return o, reject(index, fsmpb.RejectCode_OBJECT_NOT_LIVE, field+".identity",
				"version %q of object %q is %s", ref.Identity, ref.Key, o.status)
		}
		return o, nil
	}
	o, ok := m.firstVersion(ref.Key)
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

// noSuchVersion is the refusal for a version the registry does not hold:
// IDENTITY_MISMATCH if the key has other versions, OBJECT_NOT_REGISTERED
// if it has none.
func (m *Machine) noSuchVersion(index uint64, ref ObjectRef, field string) *fsmpb.Result {
	n := 0
	m.versions(ref.Key, func(object) bool { n++; return true })
	if n == 0 {
		return reject(index, fsmpb.RejectCode_OBJECT_NOT_REGISTERED, field+".key",
			"object %q is not registered", ref.Key)
	}
	return reject(index, fsmpb.RejectCode_IDENTITY_MISMATCH, field+".identity",
		"object %q has %d versions, none with identity %q", ref.Key, n, ref.Identity)
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

func (m *Machine) addReference(ref ObjectRef) { m.addReferences(ref, 1) }

// addReferences counts n new references to ref at once (one registry
// update for all the appends of a stream-set object).
func (m *Machine) addReferences(ref ObjectRef, n uint64) {
	o, ok := m.counted(ref)
	if !ok {
		panic(fmt.Sprintf("fsm: reference to unregistered object %v", ref))
	}
	o.refs += n
	m.putObject(o)
}

func (m *Machine) dropReference(ref ObjectRef) {
	o, ok := m.counted(ref)
	if !ok || o.refs == 0 {
		panic(fmt.Sprintf("fsm: dropping a reference that was never counted: %v", ref))
	}
	o.refs--
	if o.refs == 0 {
		o.idleSince = m.clock
	}
	m.putObject(o)
}

// splitVersions turns the registry of one entry a key into one of
// versions, as the level's raise to 3 applies: each entry then counts the
// references and pins naming exactly its version. A version that records,
// evidence or pins still name but the registry no longer held (its key was
// registered again with other bytes) gets an entry of its own: LIVE, as
// its bytes may still be in a versioned store, sized to cover every byte
// range naming it, registered at this index. GC then collects it like any
// other version once nothing names it: exactly that version.
func (m *Machine) splitVersions(index uint64) {
	type counts struct {
		refs, pins   uint64
		size         uint64
		pinMaxExpiry int64
	}
	byVersion := map[ObjectRef]*counts{}
	count := func(ref ObjectRef) *counts {
		c := byVersion[ref]
		if c == nil {
			c = &counts{}
			byVersion[ref] = c
		}
		return c
	}
	m.visitReferences(func(ref ObjectRef, b ByteRange) {
		c := count(ref)
		c.refs++
		c.size = max(c.size, b.Offset+b.Length)
	})
	m.pins.Ascend(func(p pin) bool {
		c := count(p.object)
		c.pins++
		c.pinMaxExpiry = max(c.pinMaxExpiry, p.expiry)
		return true
	})
	var entries []object
	m.objects.Ascend(func(o object) bool {
		entries = append(entries, o)
		return true
	})
	for _, o := range entries {
		c := count(o.ref)
		if o.refs > 0 && c.refs == 0 {
			o.idleSince = m.clock
		}
		o.refs, o.pins = c.refs, c.pins
		m.putObject(o)
		delete(byVersion, o.ref)
	}
	// Versions named but not held, in (key, identity) order so that every
	// replica inserts alike (the map's order is random; the result is not).
	missing := make([]object, 0, len(byVersion))
	for ref, c := range byVersion {
		missing = append(missing, object{
			ref: ref, target: &target{ref: ref}, size: c.size, status: ObjectLive, version: index,
			refs: c.refs, idleSince: m.clock, pins: c.pins, pinMaxExpiry: c.pinMaxExpiry,
		})
	}
	slices.SortFunc(missing, func(a, b object) int {
		return cmp.Or(cmp.Compare(a.ref.Key, b.ref.Key), cmp.Compare(a.ref.Identity, b.ref.Identity))
	})
	for _, o := range missing {
		m.putObject(o)
	}
}

// visitReferences calls fn for everything that holds a reference on an
// object: each evidence entry, and each record of a live generation.
func (m *Machine) visitReferences(fn func(ObjectRef, ByteRange)) {
	for _, s := range m.streams {
		s.evidence.Ascend(func(e evidence) bool {
			fn(e.target.ref, e.bytes)
			return true
		})
		for v := range s.views {
			for _, g := range s.views[v].gens {
				g.records.Ascend(func(r record) bool {
					fn(r.target.ref, r.bytes)
					return true
				})
			}
		}
	}
}

// registerObject records a version of a key: its identity and size. The
// same version again is a no-op.
func (m *Machine) registerObject(index uint64, c *fsmpb.RegisterObject) *fsmpb.Result {
	ref := refOf(c.Object)
	if m.Level() < versionsLevel {
		return m.registerReplacing(index, ref, c.Size)
	}
	if rej := m.checkRegisterVersion(index, ref, c.Size, "object", "size"); rej != nil {
		return rej
	}
	m.registerVersion(index, ref, c.Size)
	return &fsmpb.Result{Version: index}
}

// checkRegisterVersion refuses registering version ref with size (level 3
// and later): a version being deleted cannot be registered until it is
// DELETED, and a live one only with its registered size. objField and
// sizeField name the command's fields.
func (m *Machine) checkRegisterVersion(index uint64, ref ObjectRef, size uint64, objField, sizeField string) *fsmpb.Result {
	o, ok := m.version(ref)
	switch {
	case !ok:
		return nil
	case o.status == ObjectDeleting:
		return reject(index, fsmpb.RejectCode_OBJECT_NOT_LIVE, objField+".identity",
			"version %q of object %q is being deleted; register it again once it is DELETED", ref.Identity, ref.Key)
	case o.status == ObjectLive && o.size != size:
		return reject(index, fsmpb.RejectCode_INVALID_ARGUMENT, sizeField,
			"version %q of object %q is registered with size %d, not %d", ref.Identity, ref.Key, o.size, size)
	}
	return nil
}

// registerVersion registers version ref with size once
// checkRegisterVersion accepted it, and returns its entry. A live version
// is left as it is.
func (m *Machine) registerVersion(index uint64, ref ObjectRef, size uint64) object {
	o, ok := m.version(ref)
	switch {
	case !ok:
		o = object{ref: ref, target: &target{ref: ref}, idleSince: m.clock}
	case o.status == ObjectLive:
		return o
	default:
		// A deleted version registered again: the same bytes stored anew
		// (a content-addressed identity names them again).
		o.idleSince = m.clock
	}
	o.size = size
	o.status = ObjectLive
	o.version = index
	m.putObject(o)
	return o
}

// registerReplacing is registration below level 3, as those releases
// decide it: the key has one entry, and new bytes under a live key replace
// its identity. Records of the old bytes then fail their identity check.
func (m *Machine) registerReplacing(index uint64, ref ObjectRef, size uint64) *fsmpb.Result {
	o, ok := m.firstVersion(ref.Key)
	switch {
	case !ok:
		o = object{ref: ref, target: &target{ref: ref}, idleSince: m.clock}
	case o.status == ObjectDeleting:
		return reject(index, fsmpb.RejectCode_OBJECT_NOT_LIVE, "object.key",
			"object %q is being deleted; register it again once it is DELETED", ref.Key)
	case o.status == ObjectLive && o.ref.Identity == ref.Identity:
		if o.size != size {
			return reject(index, fsmpb.RejectCode_INVALID_ARGUMENT, "size",
				"object %q is registered with size %d, not %d", ref.Key, o.size, size)
		}
		return &fsmpb.Result{Version: index}
	default:
		// A new identity for a live key, or a deleted key registered again.
		if o.ref != ref {
			m.dropObject(o)
		}
		o.ref, o.target = ref, &target{ref: ref}
		if o.refs == 0 {
			o.idleSince = m.clock
		}
	}
	o.size = size
	o.status = ObjectLive
	o.version = index
	m.putObject(o)
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
	m.putPin(p)
	m.pinExpiry.ReplaceOrInsert(pinDeadline{at: p.pruneAt(), id: p.id})
	o.pins++
	o.pinMaxExpiry = max(o.pinMaxExpiry, p.expiry)
	m.putObject(o)
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
	m.deletePin(p)
	m.pinExpiry.Delete(pinDeadline{at: p.pruneAt(), id: p.id})
	o, ok := m.counted(p.object)
	if !ok || o.pins == 0 {
		panic(fmt.Sprintf("fsm: pin on an object that does not count it: %v", p.object))
	}
	o.pins--
	m.putObject(o)
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
	m.putObject(o)
	return &fsmpb.Result{Version: index}
}

// markObjectDeleted is GC's last phase, committed after the physical delete.
// It re-checks what GC checked before deleting, so a GC bug is refused here
// instead of recorded.
func (m *Machine) markObjectDeleted(index uint64, c *fsmpb.MarkObjectDeleted) *fsmpb.Result {
	ref := refOf(c.Object)
	o, ok := m.counted(ref)
	switch {
	case !ok && m.Level() >= versionsLevel:
		return m.noSuchVersion(index, ref, "object")
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
	m.putObject(o)
	return &fsmpb.Result{Version: index}
}
