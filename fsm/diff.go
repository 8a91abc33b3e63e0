package fsm

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"iter"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/metad/metad/fsm/fsmpb"
)

// RecordDiff is one place where two snapshots disagree: a record only in A
// (B is nil), only in B (A is nil), or in both with different contents.
type RecordDiff struct {
	// Key names the record's place in the canonical order, e.g.
	// "stream 3 COMMITTED g2 record 100".
	Key  string
	A, B *fsmpb.SnapshotRecord
}

// DiffSnapshots reads two snapshots side by side and calls visit for every
// record that differs, in canonical order; visit may stop the walk by
// returning an error, which DiffSnapshots returns. Memory is O(one record)
// per side, so two large states compare as cheaply as they are read. Both
// snapshots are fully verified (count and checksum) unless the walk stops.
//
// It is how replicas whose state hashes differ are told apart: the hash says
// that they differ, the diff says where.
func DiffSnapshots(a, b io.Reader, visit func(RecordDiff) error) (ha, hb Header, err error) {
	nextA, stopA := iter.Pull(records(a, &ha, &err))
	defer stopA()
	var errB error
	nextB, stopB := iter.Pull(records(b, &hb, &errB))
	defer stopB()
	ra, okA := nextA()
	rb, okB := nextB()
	for okA || okB {
		var ka, kb recordKey
		var c int
		switch {
		case !okA:
			kb, c = keyOf(rb), 1
		case !okB:
			ka, c = keyOf(ra), -1
		default:
			ka, kb = keyOf(ra), keyOf(rb)
			c = ka.compare(kb)
		}
		var d RecordDiff
		switch {
		case c < 0:
			d = RecordDiff{Key: ka.String(), A: ra}
		case c > 0:
			d = RecordDiff{Key: kb.String(), B: rb}
		case !proto.Equal(ra, rb):
			d = RecordDiff{Key: ka.String(), A: ra, B: rb}
		}
		if d.Key != "" {
			if verr := visit(d); verr != nil {
				return ha, hb, verr
			}
		}
		if c <= 0 {
			ra, okA = nextA()
		}
		if c >= 0 {
			rb, okB = nextB()
		}
	}
	if err != nil {
		return ha, hb, fmt.Errorf("snapshot A: %w", err)
	}
	if errB != nil {
		return ha, hb, fmt.Errorf("snapshot B: %w", errB)
	}
	return ha, hb, nil
}

var errStopped = errors.New("fsm: diff stopped")

// records adapts ReadSnapshot to an iterator; the header and the read's
// error are stored through hdr and errp when the walk ends.
func records(r io.Reader, hdr *Header, errp *error) iter.Seq[*fsmpb.SnapshotRecord] {
	return func(yield func(*fsmpb.SnapshotRecord) bool) {
		h, err := ReadSnapshot(r, func(rec *fsmpb.SnapshotRecord) error {
			if !yield(rec) {
				return errStopped
			}
			return nil
		})
		*hdr = h
		if !errors.Is(err, errStopped) {
			*errp = err
		}
	}
}

// recordKey is a record's position in the canonical order WriteSnapshot
// writes (and canonicalOrder checks): meta, objects by key, streams by id
// (each with its evidence by start, then its generations by view and number,
// each followed by its records by start), pins by id, dedup entries by
// request id, tombstones by node id.
type recordKey struct {
	phase int
	name  string // object key, dedup request id
	id    uint64 // stream id, pin id
	// Within a stream: 0 the stream record, 1 evidence, 2 generations.
	part  int
	view  View
	gen   uint64
	entry int // within a generation: 0 the generation, 1 a record
	start uint64
}

func keyOf(rec *fsmpb.SnapshotRecord) recordKey {
	switch r := rec.Record.(type) {
	case *fsmpb.SnapshotRecord_Meta:
		return recordKey{phase: phaseMeta}
	case *fsmpb.SnapshotRecord_Object:
		return recordKey{phase: phaseObjects, name: objectOrderKey(r.Object.GetObject())}
	case *fsmpb.SnapshotRecord_Stream:
		return recordKey{phase: phaseStreams, id: r.Stream.Id}
	case *fsmpb.SnapshotRecord_Evidence:
		return recordKey{phase: phaseStreams, id: r.Evidence.StreamId, part: 1, start: r.Evidence.GetRange().GetStart()}
	case *fsmpb.SnapshotRecord_Generation:
		g := r.Generation
		return recordKey{phase: phaseStreams, id: g.StreamId, part: 2, view: g.View, gen: g.Number}
	case *fsmpb.SnapshotRecord_IndexRecord:
		k := indexKeyOf(r.IndexRecord.Key)
		return recordKey{phase: phaseStreams, id: k.Stream, part: 2, view: k.View, gen: k.Generation, entry: 1, start: k.Start}
	case *fsmpb.SnapshotRecord_Pin:
		return recordKey{phase: phasePins, id: r.Pin.Id}
	case *fsmpb.SnapshotRecord_Dedup:
		return recordKey{phase: phaseDedup, name: r.Dedup.RequestId}
	case *fsmpb.SnapshotRecord_Tombstone:
		return recordKey{phase: phaseTombstones, name: r.Tombstone.NodeId}
	}
	// ReadSnapshot hands over only records it decoded; a record type added
	// to the proto without a case here sorts last and still shows up.
	return recordKey{phase: phaseTombstones + 1}
}

func (k recordKey) compare(o recordKey) int {
	return cmp.Or(
		cmp.Compare(k.phase, o.phase),
		cmp.Compare(k.name, o.name),
		cmp.Compare(k.id, o.id),
		cmp.Compare(k.part, o.part),
		cmp.Compare(k.view, o.view),
		cmp.Compare(k.gen, o.gen),
		cmp.Compare(k.entry, o.entry),
		cmp.Compare(k.start, o.start),
	)
}

func (k recordKey) String() string {
	switch k.phase {
	case phaseMeta:
		return "meta"
	case phaseObjects:
		key, identity := splitObjectOrderKey(k.name)
		return fmt.Sprintf("object %q version %q", key, identity)
	case phasePins:
		return fmt.Sprintf("pin %d", k.id)
	case phaseDedup:
		return fmt.Sprintf("dedup %q", k.name)
	case phaseTombstones:
		return fmt.Sprintf("tombstone %q", k.name)
	case phaseStreams:
		switch {
		case k.part == 0:
			return fmt.Sprintf("stream %d", k.id)
		case k.part == 1:
			return fmt.Sprintf("stream %d evidence %d", k.id, k.start)
		case k.entry == 0:
			return fmt.Sprintf("stream %d %s g%d", k.id, k.view, k.gen)
		default:
			return fmt.Sprintf("stream %d %s g%d record %d", k.id, k.view, k.gen, k.start)
		}
	}
	return "unknown record"
}

// String is the diff as text: the key marked ~ (differs), - (only in A) or
// + (only in B), then each side's record as compact protojson.
func (d RecordDiff) String() string {
	var b strings.Builder
	switch {
	case d.A == nil:
		b.WriteString("+ ")
	case d.B == nil:
		b.WriteString("- ")
	default:
		b.WriteString("~ ")
	}
	b.WriteString(d.Key)
	for _, side := range []struct {
		name string
		rec  *fsmpb.SnapshotRecord
	}{{"A", d.A}, {"B", d.B}} {
		if side.rec != nil {
			fmt.Fprintf(&b, "\n    %s: %s", side.name, protojson.MarshalOptions{}.Format(side.rec))
		}
	}
	return b.String()
}
