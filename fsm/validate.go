package fsm

import (
	"fmt"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/metad/metad/fsm/fsmpb"
)

// Validate checks a command's shape without looking at any state: required
// fields, bounds and internal consistency. It returns nil or a refusal
// naming the field at fault. Apply calls it first, so a malformed command
// is refused identically everywhere; the API calls it too, to refuse before
// anything is proposed.
func Validate(cmd *fsmpb.Command) *fsmpb.Rejection {
	if err := validate(cmd); err != nil {
		return &fsmpb.Rejection{Code: fsmpb.RejectCode_INVALID_ARGUMENT, Field: err.field, Message: err.msg}
	}
	return nil
}

type fieldError struct{ field, msg string }

func bad(field, format string, args ...any) *fieldError {
	return &fieldError{field: field, msg: fmt.Sprintf(format, args...)}
}

// under prefixes the field of a nested error.
func under(prefix string, err *fieldError) *fieldError {
	if err != nil {
		err.field = prefix + "." + err.field
	}
	return err
}

//nolint:gocyclo // one case per operation: the readable form of a table
func validate(cmd *fsmpb.Command) *fieldError {
	if len(cmd.RequestId) > MaxRequestIDLen {
		return bad("request_id", "longer than %d bytes", MaxRequestIDLen)
	}
	switch op := cmd.Op.(type) {
	case nil:
		return bad("op", "no operation")
	case *fsmpb.Command_CreateStream:
		return validateName("create_stream.name", op.CreateStream.Name)
	case *fsmpb.Command_OpenForWrite:
		return under("open_for_write", validateStreamID(op.OpenForWrite.StreamId))
	case *fsmpb.Command_CommitAppend:
		return under("commit_append", validateCommitAppend(op.CommitAppend))
	case *fsmpb.Command_PublishGeneration:
		return under("publish_generation", validatePublish(op.PublishGeneration))
	case *fsmpb.Command_RetireGeneration:
		c := op.RetireGeneration
		return under("retire_generation", first(validateStreamID(c.StreamId), validateView(c.View)))
	case *fsmpb.Command_Trim:
		c := op.Trim
		return under("trim", first(validateStreamID(c.StreamId), validateOffset("offset", c.Offset)))
	case *fsmpb.Command_Seal:
		return under("seal", validateStreamID(op.Seal.StreamId))
	case *fsmpb.Command_DeleteStream:
		return under("delete_stream", validateStreamID(op.DeleteStream.StreamId))
	case *fsmpb.Command_RegisterObject:
		return under("register_object", validateObject("object", op.RegisterObject.Object))
	case *fsmpb.Command_PinObject:
		return under("pin_object", validatePin(op.PinObject))
	case *fsmpb.Command_ReleasePin:
		if op.ReleasePin.PinId == 0 {
			return bad("release_pin.pin_id", "required")
		}
		return nil
	case *fsmpb.Command_MarkObjectDeleting:
		return under("mark_object_deleting", validateObject("object", op.MarkObjectDeleting.Object))
	case *fsmpb.Command_MarkObjectDeleted:
		return under("mark_object_deleted", validateObject("object", op.MarkObjectDeleted.Object))
	case *fsmpb.Command_ReportCandidateFailure:
		return under("report_candidate_failure", validateReport(op.ReportCandidateFailure))
	case *fsmpb.Command_RepairGen0:
		return under("repair_gen0", validateRepair(op.RepairGen0))
	case *fsmpb.Command_LiftQuarantine:
		c := op.LiftQuarantine
		if c.Key == nil {
			return bad("lift_quarantine.key", "required")
		}
		return under("lift_quarantine.key", first(validateStreamID(c.Key.StreamId), validateView(c.Key.View)))
	case *fsmpb.Command_SetFeatureLevel:
		if op.SetFeatureLevel.Level < BaseLevel {
			return bad("set_feature_level.level", "must be at least %d", BaseLevel)
		}
		return nil
	case *fsmpb.Command_AddTombstone:
		if len(op.AddTombstone.Incarnation) > MaxNodeIDLen {
			return bad("add_tombstone.incarnation", "longer than %d bytes", MaxNodeIDLen)
		}
		return under("add_tombstone", validateTombstoneID("node_id", op.AddTombstone.NodeId))
	case *fsmpb.Command_LiftTombstone:
		return under("lift_tombstone", validateTombstoneID("node_id", op.LiftTombstone.NodeId))
	case *fsmpb.Command_CommitObject:
		return under("commit_object", validateCommitObject(op.CommitObject))
	case *fsmpb.Command_SetClusterId:
		if err := ValidClusterID(op.SetClusterId.ClusterId); err != nil {
			return bad("set_cluster_id.cluster_id", "%v", err)
		}
		return nil
	default:
		return bad("op", "unknown operation %T", op)
	}
}

// first returns the first non-nil error.
func first(errs ...*fieldError) *fieldError {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func validateName(field, name string) *fieldError {
	switch {
	case name == "":
		return bad(field, "required")
	case len(name) > MaxNameLen:
		return bad(field, "longer than %d bytes", MaxNameLen)
	case !utf8.ValidString(name):
		return bad(field, "not valid UTF-8")
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return bad(field, "contains control character %U", r)
		}
	}
	return nil
}

func validateStreamID(id uint64) *fieldError {
	if id == 0 {
		return bad("stream_id", "required")
	}
	return nil
}

func validateView(v View) *fieldError {
	if !ValidView(v) {
		return bad("view", "must be COMMITTED or TOPIC_COMPACTED, not %s", v)
	}
	return nil
}

func validateOffset(field string, o uint64) *fieldError {
	if o > MaxOffset {
		return bad(field, "%d is beyond the largest offset %d", o, MaxOffset)
	}
	return nil
}

func validateRange(field string, r *fsmpb.Range) *fieldError {
	switch {
	case r == nil:
		return bad(field, "required")
	case r.End > MaxOffset:
		return bad(field+".end", "%d is beyond the largest offset %d", r.End, MaxOffset)
	case r.Start >= r.End:
		return bad(field, "[%d,%d) is empty or reversed", r.Start, r.End)
	}
	return nil
}

func validateObject(field string, o *fsmpb.ObjectRef) *fieldError {
	switch {
	case o == nil:
		return bad(field, "required")
	case o.Key == "":
		return bad(field+".key", "required")
	case len(o.Key) > MaxKeyLen:
		return bad(field+".key", "longer than %d bytes", MaxKeyLen)
	case o.Identity == "":
		return bad(field+".identity", "required")
	case len(o.Identity) > MaxIdentityLen:
		return bad(field+".identity", "longer than %d bytes", MaxIdentityLen)
	}
	return nil
}

func validateBytes(field string, b *fsmpb.ByteRange) *fieldError {
	switch {
	case b == nil:
		return bad(field, "required")
	case b.Offset > MaxOffset || b.Length > MaxOffset:
		return bad(field, "offset %d length %d out of bounds", b.Offset, b.Length)
	}
	return nil
}

func validateCommitAppend(c *fsmpb.CommitAppend) *fieldError {
	if err := validateStreamID(c.StreamId); err != nil {
		return err
	}
	if err := validateOffset("end", c.End); err != nil {
		return err
	}
	if c.End <= c.ExpectedStart {
		return bad("end", "end %d must be larger than expected_start %d", c.End, c.ExpectedStart)
	}
	return first(validateObject("object", c.Object), validateBytes("bytes", c.Bytes))
}

// validateCommitObject checks a stream-set object's shape: the object, at
// least one and at most MaxAppendsPerObject appends, each shaped as a
// CommitAppend's, and no stream twice.
func validateCommitObject(c *fsmpb.CommitObject) *fieldError {
	if err := validateObject("object", c.Object); err != nil {
		return err
	}
	if c.Size > MaxOffset {
		return bad("size", "%d out of bounds", c.Size)
	}
	switch {
	case len(c.Appends) == 0:
		return bad("appends", "required: at least one append")
	case len(c.Appends) > MaxAppendsPerObject:
		return bad("appends", "%d appends; at most %d in one object", len(c.Appends), MaxAppendsPerObject)
	}
	seen := make(map[uint64]int, len(c.Appends))
	for i, a := range c.Appends {
		field := fieldIndex("appends", i)
		if a == nil {
			return bad(field, "required")
		}
		err := first(validateStreamID(a.StreamId), validateOffset("end", a.End), validateBytes("bytes", a.Bytes))
		if err == nil && a.End <= a.ExpectedStart {
			err = bad("end", "end %d must be larger than expected_start %d", a.End, a.ExpectedStart)
		}
		if err != nil {
			return under(field, err)
		}
		if j, dup := seen[a.StreamId]; dup {
			return bad(field+".stream_id", "stream %d is already appended to by appends[%d]; one append per stream", a.StreamId, j)
		}
		seen[a.StreamId] = i
	}
	return nil
}

func validatePublish(c *fsmpb.PublishGeneration) *fieldError {
	if err := first(validateStreamID(c.StreamId), validateView(c.View)); err != nil {
		return err
	}
	if c.Generation == 0 {
		return bad("generation", "must be at least 1; generation 0 is derived from append evidence")
	}
	if err := validateRange("coverage", c.Coverage); err != nil {
		return err
	}
	if len(c.Records) > MaxRecordsPerCommand {
		return bad("records", "%d records; publish at most %d per part", len(c.Records), MaxRecordsPerCommand)
	}
	for i, r := range c.Records {
		if err := validateRecord(fieldIndex("records", i), c.View, r); err != nil {
			return err
		}
		if i > 0 && r.Range.Start < c.Records[i-1].Range.End {
			return bad(fieldIndex("records", i)+".range", "records must be sorted by start and must not overlap")
		}
	}
	return nil
}

func validateRecord(field string, view View, r *fsmpb.IndexRecord) *fieldError {
	if r == nil {
		return bad(field, "required")
	}
	err := first(validateRange(field+".range", r.Range), validateObject(field+".object", r.Object),
		validateBytes(field+".bytes", r.Bytes))
	if err != nil {
		return err
	}
	if view == Committed {
		if len(r.Survivors) > 0 {
			return bad(field+".survivors", "a COMMITTED record is dense and has no survivors")
		}
		return nil
	}
	return validateSurvivors(field+".survivors", r.Range, r.Survivors)
}

// validateSurvivors checks a sparse record's surviving sub-ranges: at least
// one, sorted, disjoint, non-empty, inside the record's span.
func validateSurvivors(field string, span *fsmpb.Range, ss []*fsmpb.Range) *fieldError {
	switch {
	case len(ss) == 0:
		return bad(field, "a TOPIC_COMPACTED record needs at least one surviving range")
	case len(ss) > MaxSurvivorsPerRecord:
		return bad(field, "%d ranges; at most %d", len(ss), MaxSurvivorsPerRecord)
	}
	prevEnd := span.Start
	for i, s := range ss {
		f := fieldIndex(field, i)
		if err := validateRange(f, s); err != nil {
			return err
		}
		if s.Start < prevEnd || s.End > span.End {
			return bad(f, "[%d,%d) must be sorted, disjoint and inside the span [%d,%d)", s.Start, s.End, span.Start, span.End)
		}
		prevEnd = s.End
	}
	return nil
}

func validatePin(c *fsmpb.PinObject) *fieldError {
	if err := validateObject("object", c.Object); err != nil {
		return err
	}
	if len(c.Holder) > MaxHolderLen {
		return bad("holder", "longer than %d bytes", MaxHolderLen)
	}
	if ttl := time.Duration(c.TtlNanos); ttl < MinPinTTL || ttl > MaxPinTTL {
		return bad("ttl_nanos", "%s is outside [%s, %s]", ttl, MinPinTTL, MaxPinTTL)
	}
	return nil
}

func validateReport(c *fsmpb.ReportCandidateFailure) *fieldError {
	if c.Key == nil {
		return bad("key", "required")
	}
	if err := under("key", first(validateStreamID(c.Key.StreamId), validateView(c.Key.View))); err != nil {
		return err
	}
	if _, ok := fsmpb.FailureKind_name[int32(c.Kind)]; !ok || c.Kind == fsmpb.FailureKind_FAILURE_KIND_UNSPECIFIED {
		return bad("kind", "unknown failure kind %d", c.Kind)
	}
	if len(c.Detail) > MaxDetailLen {
		return bad("detail", "longer than %d bytes", MaxDetailLen)
	}
	return nil
}

func validateRepair(c *fsmpb.RepairGen0) *fieldError {
	if err := validateStreamID(c.StreamId); err != nil {
		return err
	}
	if len(c.Replace) > MaxRepairReplace {
		return bad("replace", "%d records; at most %d", len(c.Replace), MaxRepairReplace)
	}
	for i, r := range c.Replace {
		if r == nil || (i > 0 && r.Start <= c.Replace[i-1].Start) {
			return bad(fieldIndex("replace", i), "must be present and sorted by start")
		}
	}
	return validateRecord("record", Committed, c.Record)
}
