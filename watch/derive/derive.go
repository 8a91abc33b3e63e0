package derive

import (
	"fmt"

	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/fsmpb"
)

// Kind is what changed in a stream.
type Kind uint8

const (
	// Opened: a writer opened the stream; WriterEpoch is the new epoch.
	Opened Kind = iota + 1
	// Appended: an append committed; Range, Object and Bytes describe it
	// and CommittedEnd is the new end.
	Appended
	// Trimmed: the trim point moved to Trim.
	Trimmed
	// Sealed: the stream was sealed; CommittedEnd is final.
	Sealed
	// Published: generation Generation of View became readable.
	Published
	// Retired: generation Generation of View was retired.
	Retired
	// Deleted: the stream was deleted; no event follows.
	Deleted
)

var kindNames = [...]string{"", "opened", "appended", "trimmed", "sealed", "published", "retired", "deleted"}

func (k Kind) String() string {
	if int(k) < len(kindNames) && k != 0 {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Event is one change of one stream. Version is the Raft index of the
// command that made it: unique and increasing within a stream, so it is
// both the order and the resume point. The stream's state after the change
// (CommittedEnd, Trim, WriterEpoch, Sealed) rides on every event but
// Deleted, so a follower never needs a read to know where the stream is.
type Event struct {
	Kind    Kind
	Version uint64
	Stream  uint64

	CommittedEnd uint64
	Trim         uint64
	WriterEpoch  uint64
	Sealed       bool

	// Appended only.
	Range  fsm.Range
	Object fsm.ObjectRef
	Bytes  fsm.ByteRange

	// Published and Retired only.
	View       fsm.View
	Generation uint64
}

// StreamOf returns the stream a command addresses, or 0 for commands that
// change no stream (objects, pins) or create one.
func StreamOf(cmd *fsmpb.Command) uint64 {
	switch op := cmd.Op.(type) {
	case *fsmpb.Command_OpenForWrite:
		return op.OpenForWrite.StreamId
	case *fsmpb.Command_CommitAppend:
		return op.CommitAppend.StreamId
	case *fsmpb.Command_Trim:
		return op.Trim.StreamId
	case *fsmpb.Command_Seal:
		return op.Seal.StreamId
	case *fsmpb.Command_PublishGeneration:
		return op.PublishGeneration.StreamId
	case *fsmpb.Command_RetireGeneration:
		return op.RetireGeneration.StreamId
	case *fsmpb.Command_DeleteStream:
		return op.DeleteStream.StreamId
	}
	return 0
}

// DeriveObject is the changes a stream-set object applied at index made:
// one Appended event per stream it appended to, in the command's order, all
// at version index (G16). A refusal and a deduplicated retry change
// nothing. after returns a stream's state once the command applied.
func DeriveObject(index uint64, c *fsmpb.CommitObject, res *fsmpb.Result, after func(uint64) (fsm.StreamInfo, bool)) []Event {
	if res == nil || res.Rejection != nil || res.Deduplicated {
		return nil
	}
	obj := fsm.ObjectRef{Key: c.Object.GetKey(), Identity: c.Object.GetIdentity()}
	evs := make([]Event, 0, len(c.Appends))
	for _, a := range c.Appends {
		s, _ := after(a.StreamId)
		evs = append(evs, Event{
			Kind: Appended, Version: index, Stream: a.StreamId,
			Range:  fsm.Range{Start: a.ExpectedStart, End: a.End},
			Object: obj, Bytes: fsm.ByteRange{Offset: a.Bytes.GetOffset(), Length: a.Bytes.GetLength()},
			CommittedEnd: s.CommittedEnd, Trim: s.Trim, WriterEpoch: s.WriterEpoch, Sealed: s.Status == fsm.StreamSealed,
		})
	}
	return evs
}

// Derive is the change the command applied at index made, if it made one.
// after is the stream's state once the command applied (zero when it was
// deleted). It is a pure function of its arguments.
//
// A refused command and a deduplicated retry change nothing, so they yield
// nothing. Trim to the current trim point and Seal of a sealed stream are
// accepted without changing the stream; the stream's version then stays
// below index, which is how they are told apart from real changes. A
// partial PublishGeneration (complete=false) yields nothing: readers see a
// generation only once it is complete. Index-record repairs and quarantines
// (RepairGen0, ReportCandidateFailure) change records, not the stream, and
// yield nothing either.
func Derive(index uint64, cmd *fsmpb.Command, res *fsmpb.Result, after fsm.StreamInfo) (Event, bool) {
	if res == nil || res.Rejection != nil || res.Deduplicated {
		return Event{}, false
	}
	ev := Event{Version: index, Stream: StreamOf(cmd)}
	if ev.Stream == 0 {
		return Event{}, false
	}
	switch op := cmd.Op.(type) {
	case *fsmpb.Command_OpenForWrite:
		ev.Kind = Opened
	case *fsmpb.Command_CommitAppend:
		c := op.CommitAppend
		ev.Kind = Appended
		ev.Range = fsm.Range{Start: c.ExpectedStart, End: c.End}
		ev.Object = fsm.ObjectRef{Key: c.Object.GetKey(), Identity: c.Object.GetIdentity()}
		ev.Bytes = fsm.ByteRange{Offset: c.Bytes.GetOffset(), Length: c.Bytes.GetLength()}
	case *fsmpb.Command_Trim:
		if after.Version != index {
			return Event{}, false
		}
		ev.Kind = Trimmed
	case *fsmpb.Command_Seal:
		if after.Version != index {
			return Event{}, false
		}
		ev.Kind = Sealed
	case *fsmpb.Command_PublishGeneration:
		if !op.PublishGeneration.Complete {
			return Event{}, false
		}
		ev.Kind, ev.View, ev.Generation = Published, op.PublishGeneration.View, op.PublishGeneration.Generation
	case *fsmpb.Command_RetireGeneration:
		ev.Kind, ev.View, ev.Generation = Retired, op.RetireGeneration.View, op.RetireGeneration.Generation
	case *fsmpb.Command_DeleteStream:
		ev.Kind = Deleted
		return ev, true
	}
	ev.CommittedEnd, ev.Trim, ev.WriterEpoch = after.CommittedEnd, after.Trim, after.WriterEpoch
	ev.Sealed = after.Status == fsm.StreamSealed
	return ev, true
}
