package fsm

import (
	"fmt"

	"github.com/metad/metad/checksum"
	"github.com/metad/metad/fsm/fsmpb"
)

// The enums of the log format, under shorter names.
type (
	// View is a read view of a stream.
	View = fsmpb.View
	// StreamStatus is ACTIVE, SEALED or DELETED.
	StreamStatus = fsmpb.StreamStatus
	// GenerationStatus is BUILDING, PUBLISHED or RETIRED.
	GenerationStatus = fsmpb.GenerationStatus
	// RecordStatus is VALID, RETIRED or QUARANTINED.
	RecordStatus = fsmpb.RecordStatus
	// ObjectStatus is LIVE, DELETING or DELETED.
	ObjectStatus = fsmpb.ObjectStatus
	// FailureKind is why a reader could not use a candidate.
	FailureKind = fsmpb.FailureKind
	// RejectCode classifies a deterministic refusal.
	RejectCode = fsmpb.RejectCode
)

const (
	Committed      = fsmpb.View_COMMITTED
	TopicCompacted = fsmpb.View_TOPIC_COMPACTED

	StreamActive = fsmpb.StreamStatus_STREAM_STATUS_ACTIVE
	StreamSealed = fsmpb.StreamStatus_STREAM_STATUS_SEALED

	GenerationBuilding  = fsmpb.GenerationStatus_GENERATION_STATUS_BUILDING
	GenerationPublished = fsmpb.GenerationStatus_GENERATION_STATUS_PUBLISHED
	GenerationRetired   = fsmpb.GenerationStatus_GENERATION_STATUS_RETIRED

	RecordValid       = fsmpb.RecordStatus_RECORD_STATUS_VALID
	RecordRetired     = fsmpb.RecordStatus_RECORD_STATUS_RETIRED
	RecordQuarantined = fsmpb.RecordStatus_RECORD_STATUS_QUARANTINED

	FailureUnspecified      = fsmpb.FailureKind_FAILURE_KIND_UNSPECIFIED
	FailureIdentityMismatch = fsmpb.FailureKind_FAILURE_KIND_IDENTITY_MISMATCH
	FailureObjectMissing    = fsmpb.FailureKind_FAILURE_KIND_OBJECT_MISSING
	FailureCorrupt          = fsmpb.FailureKind_FAILURE_KIND_CORRUPT
	FailureIOError          = fsmpb.FailureKind_FAILURE_KIND_IO_ERROR

	ObjectLive     = fsmpb.ObjectStatus_OBJECT_STATUS_LIVE
	ObjectDeleting = fsmpb.ObjectStatus_OBJECT_STATUS_DELETING
	ObjectDeleted  = fsmpb.ObjectStatus_OBJECT_STATUS_DELETED
)

// ValidView reports whether v names a real view.
func ValidView(v View) bool { return v == Committed || v == TopicCompacted }

// Range is the half-open offset range [Start, End).
type Range struct{ Start, End uint64 }

// Contains reports whether offset o lies in r.
func (r Range) Contains(o uint64) bool { return r.Start <= o && o < r.End }

// Overlaps reports whether r and s share an offset.
func (r Range) Overlaps(s Range) bool { return r.Start < s.End && s.Start < r.End }

func (r Range) String() string { return fmt.Sprintf("[%d,%d)", r.Start, r.End) }

// ByteRange is a slice of an object's bytes.
type ByteRange struct{ Offset, Length uint64 }

// ObjectRef names exact bytes: a key and the publication identity of the
// bytes under it. A key can be reused; an identity cannot.
type ObjectRef struct{ Key, Identity string }

func (o ObjectRef) String() string { return o.Key + "@" + o.Identity }

// IndexKey names one index record: generation Generation of (Stream, View),
// the record starting at Start.
type IndexKey struct {
	Stream     uint64
	View       View
	Generation uint64
	Start      uint64
}

func (k IndexKey) String() string {
	return fmt.Sprintf("%d/%s/g%d/%d", k.Stream, k.View, k.Generation, k.Start)
}

// StreamInfo is a stream's snapshot: its metadata record plus its ends.
type StreamInfo struct {
	ID             uint64
	Name           string
	WriterEpoch    uint64
	Status         StreamStatus
	Version        uint64 // Raft index of the last write to this stream
	CommittedEnd   uint64 // first offset not yet committed
	Trim           uint64 // first readable offset
	CreatedVersion uint64
}

// GenerationInfo describes one live (building or published) generation.
type GenerationInfo struct {
	Stream   uint64
	View     View
	Number   uint64
	Status   GenerationStatus
	Version  uint64 // Raft index of the last write to the generation
	Coverage Range  // offsets the generation speaks for
	Records  int
}

// RecordInfo is one index record as readers see it. Survivors is shared with
// the machine and must not be modified.
type RecordInfo struct {
	Key       IndexKey
	Range     Range   // dense: covered offsets; sparse: span
	Survivors []Range // sparse only: sorted, disjoint, inside Range
	Object    ObjectRef
	Bytes     ByteRange
	Version   uint64 // Raft index of the record's last write
	Checksum  uint32
	Status    RecordStatus
	// Data is the CRC-32C of the bytes of Bytes, as the writer committed
	// it; absent on records from before feature level 3.
	Data checksum.Data
}

// EvidenceInfo is the authoritative record of one committed append.
type EvidenceInfo struct {
	Stream      uint64
	Range       Range
	Object      ObjectRef
	Bytes       ByteRange
	WriterEpoch uint64
	Version     uint64 // Raft index the append committed at
	// Data is the CRC-32C of the append's bytes; absent before level 3.
	Data checksum.Data
}

// ObjectInfo is one entry of the object registry.
type ObjectInfo struct {
	Ref     ObjectRef
	Size    uint64
	Status  ObjectStatus
	Version uint64
	// References counts evidence entries and records of live generations
	// naming this key, whatever identity they name.
	References uint64
	// IdleSince is the machine time references last dropped to zero (or the
	// object was registered), for GC's minimum age.
	IdleSince int64
	// Pins counts pins not yet pruned; PinMaxExpiry is the latest expiry of
	// any pin ever taken on the object.
	Pins         uint64
	PinMaxExpiry int64
}

// PinInfo is one lease on (object, identity).
type PinInfo struct {
	ID      uint64
	Object  ObjectRef
	Holder  string
	TTL     int64 // nanoseconds
	Expiry  int64 // machine time, unix nanoseconds
	Version uint64
}

// Expired reports whether the pin has expired at machine time now.
func (p PinInfo) Expired(now int64) bool { return p.Expiry <= now }
