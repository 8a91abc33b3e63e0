package model

import (
	"fmt"
	"slices"
	"strings"

	"github.com/metad/metad/jepsen/history"
)

// Stream is the model's state of one stream, written from GUARANTEES.md
// and metad.proto, not from metad's code. Values are immutable: every
// change returns a new Stream sharing what did not change, so porcupine can
// keep many states of one search alive at once.
type Stream struct {
	ID               uint64
	End, Trim, Epoch uint64
	// appends is the append evidence, contiguous from offset 0 (Appends
	// lists it). Entries wholly below Trim are kept (the data check needs
	// them) but no longer count as evidence.
	appends evidence
	// Versions: the cluster keeps many versions per key (feature level
	// 3): a new version registered under a key leaves records naming
	// another version of it admissible (G10), so Replaced stays empty.
	Versions bool
	// Replaced holds keys whose registered identity was replaced by new
	// bytes, sorted by key (below feature level 3, where a key has one
	// version). Records naming another identity of such a key are not
	// admissible (G8: detected, never served).
	Replaced []KeyIdentity
	// Suspect holds records a confirmed (or indeterminate) failure report
	// may have quarantined, sorted: the repair job lifts quarantine at a
	// time the history does not show, so from the report on, a resolve may
	// pass such a record over or return it (report.go).
	Suspect []RecordID
	// Views: [0] COMMITTED (whose generation 0 is implicit: it is the
	// append evidence), [1] TOPIC_COMPACTED.
	Views [2]View
	// digest identifies the sequence of effective changes, for porcupine's
	// state cache (Equal and Hash).
	digest uint64
}

// evidence is an append-only list that successive states share. Porcupine
// keeps a state for every step of its search, so copying the list on each
// append made memory grow with the square of a stream's appends (gigabytes
// on a long run with a kill). A state extends the shared buffer in place
// when it is the buffer's longest state; a state whose prefix another
// branch of the search already extended copies it instead. States of one
// search are only used by that search's goroutine.
type evidence struct {
	buf *[]Append // shared; this state's appends are (*buf)[:n]
	n   int
}

func (e evidence) list() []Append {
	if e.buf == nil {
		return nil
	}
	return (*e.buf)[:e.n:e.n]
}

func (e evidence) with(a Append) evidence {
	if e.buf != nil && len(*e.buf) == e.n {
		*e.buf = append(*e.buf, a)
		return evidence{buf: e.buf, n: e.n + 1}
	}
	items := make([]Append, e.n, 2*e.n+1)
	copy(items, e.list())
	items = append(items, a)
	return evidence{buf: &items, n: e.n + 1}
}

// Appends is the append evidence, contiguous from offset 0. The caller must
// not modify it.
func (s *Stream) Appends() []Append { return s.appends.list() }

// Append is one committed append: its offsets, the exact object version
// (key, identity) and byte range it named, and the data checksum its
// writer committed with it (nil: none sent).
type Append struct {
	Range   history.Range
	Object  history.Object
	Bytes   history.Bytes
	DataCRC *uint32
}

// KeyIdentity is the identity a key was re-registered with.
type KeyIdentity struct{ Key, Identity string }

// View is the generations of one (stream, view).
type View struct {
	// Last is the largest generation number ever created (HasLast: any).
	Last    uint64
	HasLast bool
	// Gens are the live generations, ascending by number.
	Gens []Gen
}

// Gen is one live generation.
type Gen struct {
	Number    uint64
	Published bool
	Coverage  history.Range
	Records   []history.Record // sorted by start, disjoint
}

// NewStream is a freshly created stream: empty, epoch 0, COMMITTED
// generation 0 existing (and so "last" in that view).
func NewStream(id uint64) Stream { return NewStreamAt(id, false) }

// NewStreamAt is NewStream for a cluster that keeps many versions per key
// (versions) or one.
func NewStreamAt(id uint64, versions bool) Stream {
	s := Stream{ID: id, Versions: versions, digest: id*0x9e3779b97f4a7c15 + 1}
	s.Views[0].HasLast = true
	return s
}

func viewIndex(v string) int {
	if v == TopicCompacted {
		return 1
	}
	return 0
}

func viewName(i int) string {
	if i == 1 {
		return TopicCompacted
	}
	return Committed
}

// mix folds a change into the digest (FNV-1a over its description).
func (s *Stream) mix(change string) {
	h := s.digest ^ 0xcbf29ce484222325
	for i := 0; i < len(change); i++ {
		h ^= uint64(change[i])
		h *= 0x100000001b3
	}
	s.digest = h
}

// identityOK reports whether obj is still the registered identity of its
// key (the only way an object the model references stops being LIVE). With
// many versions per key every version the model references stays LIVE:
// GC collects only unreferenced versions.
func (s *Stream) identityOK(obj history.Object) bool {
	if s.Versions {
		return true
	}
	i, ok := slices.BinarySearchFunc(s.Replaced, obj.Key, func(k KeyIdentity, key string) int { return strings.Compare(k.Key, key) })
	return !ok || s.Replaced[i].Identity == obj.Identity
}

// referenced reports whether any evidence above trim or any record of a
// live generation names key: such an object cannot be DELETING.
func (s *Stream) referenced(key string) bool {
	for _, a := range s.Appends() {
		if a.Range.End > s.Trim && a.Object.Key == key {
			return true
		}
	}
	for _, v := range s.Views {
		for _, g := range v.Gens {
			for _, r := range g.Records {
				if r.Object.Key == key {
					return true
				}
			}
		}
	}
	return false
}

// referencedVersion is referenced for one version (key, identity): with
// many versions per key each is referenced, and collected, on its own, so
// a version nothing names yet (a new version registered beside a
// referenced one) may be collected while the key is referenced.
func (s *Stream) referencedVersion(obj history.Object) bool {
	for _, a := range s.Appends() {
		if a.Range.End > s.Trim && a.Object == obj {
			return true
		}
	}
	for _, v := range s.Views {
		for _, g := range v.Gens {
			for _, r := range g.Records {
				if r.Object == obj {
					return true
				}
			}
		}
	}
	return false
}

// mayBeCollected reports whether the object a mutation names could have
// been collected (unreferenced, idle), which metad refuses with
// OBJECT_NOT_LIVE: by key with one version per key, by version with many.
func (s *Stream) mayBeCollected(obj history.Object) bool {
	if s.Versions {
		return !s.referencedVersion(obj)
	}
	return !s.referenced(obj.Key)
}

// appendAt returns the append containing offset o.
func (s *Stream) appendAt(o uint64) (Append, bool) {
	appends := s.Appends()
	i, found := slices.BinarySearchFunc(appends, o, func(a Append, o uint64) int {
		switch {
		case a.Range.End <= o:
			return -1
		case a.Range.Start > o:
			return 1
		}
		return 0
	})
	if !found {
		return Append{}, false
	}
	return appends[i], true
}

func (s Stream) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "end=%d trim=%d epoch=%d", s.End, s.Trim, s.Epoch)
	for i, v := range s.Views {
		for _, g := range v.Gens {
			st := "building"
			if g.Published {
				st = "published"
			}
			fmt.Fprintf(&b, " %s/g%d%v(%s,%d recs)", viewName(i)[:1], g.Number, g.Coverage, st, len(g.Records))
		}
	}
	if len(s.Replaced) > 0 {
		fmt.Fprintf(&b, " replaced=%d", len(s.Replaced))
	}
	if len(s.Suspect) > 0 {
		fmt.Fprintf(&b, " suspect=%d", len(s.Suspect))
	}
	return b.String()
}
