package fsm

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/metad/metad/fsm/fsmpb"
)

// validObj is a well-formed object reference.
var validObj = ObjectRef{Key: "k", Identity: "i"}

func denseRec(start, end uint64) *fsmpb.IndexRecord {
	return NewIndexRecord(IndexKey{Stream: 1, View: Committed, Generation: 1, Start: start},
		Range{start, end}, nil, validObj, ByteRange{0, 1})
}

func sparseRec(start, end uint64, survivors ...Range) *fsmpb.IndexRecord {
	return NewIndexRecord(IndexKey{Stream: 1, View: TopicCompacted, Generation: 1, Start: start},
		Range{start, end}, survivors, validObj, ByteRange{0, 1})
}

// mutated returns a copy of c changed by f.
func mutated[T proto.Message](c T, f func(T)) T {
	c = proto.Clone(c).(T)
	f(c)
	return c
}

func TestValidate(t *testing.T) {
	appendOK := cmdAppend(1, 1, 0, 10, validObj, ByteRange{0, 1}, true)
	ca := func(f func(*fsmpb.CommitAppend)) *fsmpb.Command {
		return mutated(appendOK, func(c *fsmpb.Command) { f(c.GetCommitAppend()) })
	}
	pubOK := cmdPublish(1, TopicCompacted, 1, 1, Range{0, 10}, true, sparseRec(0, 5, Range{1, 2}), sparseRec(5, 10, Range{5, 10}))
	pub := func(f func(*fsmpb.PublishGeneration)) *fsmpb.Command {
		return mutated(pubOK, func(c *fsmpb.Command) { f(c.GetPublishGeneration()) })
	}
	pinOK := cmdPin(validObj, strings.Repeat("h", MaxHolderLen), int64(time.Second))
	pin := func(f func(*fsmpb.PinObject)) *fsmpb.Command {
		return mutated(pinOK, func(c *fsmpb.Command) { f(c.GetPinObject()) })
	}
	reportOK := cmdReport(IndexKey{1, Committed, 0, 0}, 1, fsmpb.FailureKind_FAILURE_KIND_IO_ERROR, strings.Repeat("d", MaxDetailLen))
	report := func(f func(*fsmpb.ReportCandidateFailure)) *fsmpb.Command {
		return mutated(reportOK, func(c *fsmpb.Command) { f(c.GetReportCandidateFailure()) })
	}
	repairOK := cmdRepair(1, 0, 1, []*fsmpb.RecordVersion{{Start: 0, Version: 1}, {Start: 5, Version: 2}}, denseRec(0, 10))
	repair := func(f func(*fsmpb.RepairGen0)) *fsmpb.Command {
		return mutated(repairOK, func(c *fsmpb.Command) { f(c.GetRepairGen0()) })
	}
	manyRecs := func(n int) []*fsmpb.IndexRecord {
		out := make([]*fsmpb.IndexRecord, n)
		for i := range out {
			out[i] = sparseRec(uint64(i), uint64(i+1), Range{uint64(i), uint64(i + 1)})
		}
		return out
	}
	manySurvivors := func(n int) []*fsmpb.Range {
		out := make([]*fsmpb.Range, n)
		for i := range out {
			out[i] = Range{uint64(i), uint64(i + 1)}.PB()
		}
		return out
	}
	manyReplace := func(n int) []*fsmpb.RecordVersion {
		out := make([]*fsmpb.RecordVersion, n)
		for i := range out {
			out[i] = &fsmpb.RecordVersion{Start: uint64(i), Version: 1}
		}
		return out
	}
	objCases := func(prefix string, mk func(*fsmpb.ObjectRef) *fsmpb.Command) []validateCase {
		return []validateCase{
			{prefix + " ok at bounds", mk(&fsmpb.ObjectRef{Key: strings.Repeat("k", MaxKeyLen), Identity: strings.Repeat("i", MaxIdentityLen)}), ""},
			{prefix + " nil", mk(nil), prefix + ".object"},
			{prefix + " no key", mk(&fsmpb.ObjectRef{Identity: "i"}), prefix + ".object.key"},
			{prefix + " key too long", mk(&fsmpb.ObjectRef{Key: strings.Repeat("k", MaxKeyLen+1), Identity: "i"}), prefix + ".object.key"},
			{prefix + " no identity", mk(&fsmpb.ObjectRef{Key: "k"}), prefix + ".object.identity"},
			{prefix + " identity too long", mk(&fsmpb.ObjectRef{Key: "k", Identity: strings.Repeat("i", MaxIdentityLen+1)}), prefix + ".object.identity"},
		}
	}

	cases := []validateCase{
		{"request id at bound", withID(cmdCreate("a"), strings.Repeat("r", MaxRequestIDLen)), ""},
		{"request id too long", withID(cmdCreate("a"), strings.Repeat("r", MaxRequestIDLen+1)), "request_id"},
		{"no op", &fsmpb.Command{}, "op"},

		{"name at bound", cmdCreate(strings.Repeat("n", MaxNameLen)), ""},
		{"name unicode", cmdCreate("日本語 name"), ""},
		{"name empty", cmdCreate(""), "create_stream.name"},
		{"name too long", cmdCreate(strings.Repeat("n", MaxNameLen+1)), "create_stream.name"},
		{"name not utf-8", cmdCreate("a\xffb"), "create_stream.name"},
		{"name control", cmdCreate("a\nb"), "create_stream.name"},
		{"name C1 control", cmdCreate("a\u0085b"), "create_stream.name"},

		{"open ok", cmdOpen(1), ""},
		{"open no stream", cmdOpen(0), "open_for_write.stream_id"},

		{"append ok", appendOK, ""},
		{"append end at MaxOffset", ca(func(c *fsmpb.CommitAppend) { c.End = MaxOffset }), ""},
		{"append no stream", ca(func(c *fsmpb.CommitAppend) { c.StreamId = 0 }), "commit_append.stream_id"},
		{"append end past MaxOffset", ca(func(c *fsmpb.CommitAppend) { c.End = MaxOffset + 1 }), "commit_append.end"},
		{"append empty", ca(func(c *fsmpb.CommitAppend) { c.End = c.ExpectedStart }), "commit_append.end"},
		{"append reversed", ca(func(c *fsmpb.CommitAppend) { c.ExpectedStart, c.End = 5, 4 }), "commit_append.end"},
		{"append no bytes", ca(func(c *fsmpb.CommitAppend) { c.Bytes = nil }), "commit_append.bytes"},
		{"append bytes at bound", ca(func(c *fsmpb.CommitAppend) { c.Bytes = ByteRange{MaxOffset, MaxOffset}.PB() }), ""},
		{"append bytes offset", ca(func(c *fsmpb.CommitAppend) { c.Bytes.Offset = MaxOffset + 1 }), "commit_append.bytes"},
		{"append bytes length", ca(func(c *fsmpb.CommitAppend) { c.Bytes.Length = MaxOffset + 1 }), "commit_append.bytes"},

		{"publish ok", pubOK, ""},
		{"publish dense ok", cmdPublish(1, Committed, 1, 1, Range{0, 10}, false, denseRec(0, 10)), ""},
		{"publish no records", pub(func(c *fsmpb.PublishGeneration) { c.Records = nil }), ""},
		{"publish no stream", pub(func(c *fsmpb.PublishGeneration) { c.StreamId = 0 }), "publish_generation.stream_id"},
		{"publish no view", pub(func(c *fsmpb.PublishGeneration) { c.View = 0 }), "publish_generation.view"},
		{"publish unknown view", pub(func(c *fsmpb.PublishGeneration) { c.View = 3 }), "publish_generation.view"},
		{"publish gen 0", pub(func(c *fsmpb.PublishGeneration) { c.Generation = 0 }), "publish_generation.generation"},
		{"publish no coverage", pub(func(c *fsmpb.PublishGeneration) { c.Coverage = nil }), "publish_generation.coverage"},
		{"publish coverage past MaxOffset", pub(func(c *fsmpb.PublishGeneration) { c.Coverage.End = MaxOffset + 1 }), "publish_generation.coverage.end"},
		{"publish coverage empty", pub(func(c *fsmpb.PublishGeneration) { c.Coverage.Start = 10 }), "publish_generation.coverage"},
		{"publish records at bound", pub(func(c *fsmpb.PublishGeneration) { c.Records = manyRecs(MaxRecordsPerCommand) }), ""},
		{"publish too many records", pub(func(c *fsmpb.PublishGeneration) { c.Records = manyRecs(MaxRecordsPerCommand + 1) }), "publish_generation.records"},
		{"publish nil record", pub(func(c *fsmpb.PublishGeneration) { c.Records[1] = nil }), "publish_generation.records[1]"},
		{"publish record no range", pub(func(c *fsmpb.PublishGeneration) { c.Records[1].Range = nil }), "publish_generation.records[1].range"},
		{"publish record range past MaxOffset", pub(func(c *fsmpb.PublishGeneration) { c.Records[1].Range.End = MaxOffset + 1 }), "publish_generation.records[1].range.end"},
		{"publish record empty", pub(func(c *fsmpb.PublishGeneration) { c.Records[1].Range.End = 5 }), "publish_generation.records[1].range"},
		{"publish record no object", pub(func(c *fsmpb.PublishGeneration) { c.Records[0].Object = nil }), "publish_generation.records[0].object"},
		{"publish record no key", pub(func(c *fsmpb.PublishGeneration) { c.Records[0].Object.Key = "" }), "publish_generation.records[0].object.key"},
		{"publish record no identity", pub(func(c *fsmpb.PublishGeneration) { c.Records[0].Object.Identity = "" }), "publish_generation.records[0].object.identity"},
		{"publish record no bytes", pub(func(c *fsmpb.PublishGeneration) { c.Records[0].Bytes = nil }), "publish_generation.records[0].bytes"},
		{"publish record bytes", pub(func(c *fsmpb.PublishGeneration) { c.Records[0].Bytes.Length = MaxOffset + 1 }), "publish_generation.records[0].bytes"},
		{"publish records overlap", pub(func(c *fsmpb.PublishGeneration) { c.Records[1].Range.Start = 4 }), "publish_generation.records[1].range"},
		{"publish records unsorted", pub(func(c *fsmpb.PublishGeneration) { c.Records[0], c.Records[1] = c.Records[1], c.Records[0] }), "publish_generation.records[1].range"},
		{"publish dense with survivors", cmdPublish(1, Committed, 1, 1, Range{0, 10}, false, sparseRec(0, 10, Range{1, 2})), "publish_generation.records[0].survivors"},
		{"publish sparse without survivors", pub(func(c *fsmpb.PublishGeneration) { c.Records[1].Survivors = nil }), "publish_generation.records[1].survivors"},
		{"publish survivors at bound", cmdPublish(1, TopicCompacted, 1, 1, Range{0, 5000}, false,
			&fsmpb.IndexRecord{Range: Range{0, 5000}.PB(), Survivors: manySurvivors(MaxSurvivorsPerRecord), Object: validObj.PB(), Bytes: ByteRange{}.PB()}), ""},
		{"publish too many survivors", cmdPublish(1, TopicCompacted, 1, 1, Range{0, 5000}, false,
			&fsmpb.IndexRecord{Range: Range{0, 5000}.PB(), Survivors: manySurvivors(MaxSurvivorsPerRecord + 1), Object: validObj.PB(), Bytes: ByteRange{}.PB()}), "publish_generation.records[0].survivors"},
		{"publish nil survivor", pub(func(c *fsmpb.PublishGeneration) { c.Records[0].Survivors[0] = nil }), "publish_generation.records[0].survivors[0]"},
		{"publish empty survivor", pub(func(c *fsmpb.PublishGeneration) { c.Records[0].Survivors[0].End = 1 }), "publish_generation.records[0].survivors[0]"},
		{"publish survivor before span", pub(func(c *fsmpb.PublishGeneration) {
			c.Records[1].Survivors = RangesPB([]Range{{4, 6}})
		}), "publish_generation.records[1].survivors[0]"},
		{"publish survivor after span", pub(func(c *fsmpb.PublishGeneration) {
			c.Records[1].Survivors = RangesPB([]Range{{5, 6}, {9, 11}})
		}), "publish_generation.records[1].survivors[1]"},
		{"publish survivors adjacent", pub(func(c *fsmpb.PublishGeneration) {
			c.Records[1].Survivors = RangesPB([]Range{{5, 6}, {6, 10}})
		}), ""},
		{"publish survivors overlap", pub(func(c *fsmpb.PublishGeneration) {
			c.Records[1].Survivors = RangesPB([]Range{{5, 7}, {6, 10}})
		}), "publish_generation.records[1].survivors[1]"},

		{"retire ok", cmdRetire(1, TopicCompacted, 0), ""},
		{"retire no stream", cmdRetire(0, TopicCompacted, 1), "retire_generation.stream_id"},
		{"retire no view", cmdRetire(1, 0, 1), "retire_generation.view"},

		{"trim ok", cmdTrim(1, MaxOffset), ""},
		{"trim no stream", cmdTrim(0, 1), "trim.stream_id"},
		{"trim past MaxOffset", cmdTrim(1, MaxOffset+1), "trim.offset"},
		{"seal ok", cmdSeal(1), ""},
		{"seal no stream", cmdSeal(0), "seal.stream_id"},
		{"delete ok", cmdDelete(1), ""},
		{"delete no stream", cmdDelete(0), "delete_stream.stream_id"},

		{"pin ok", pinOK, ""},
		{"pin min ttl", pin(func(c *fsmpb.PinObject) { c.TtlNanos = int64(MinPinTTL) }), ""},
		{"pin max ttl", pin(func(c *fsmpb.PinObject) { c.TtlNanos = int64(MaxPinTTL) }), ""},
		{"pin ttl too short", pin(func(c *fsmpb.PinObject) { c.TtlNanos = int64(MinPinTTL) - 1 }), "pin_object.ttl_nanos"},
		{"pin ttl too long", pin(func(c *fsmpb.PinObject) { c.TtlNanos = int64(MaxPinTTL) + 1 }), "pin_object.ttl_nanos"},
		{"pin ttl negative", pin(func(c *fsmpb.PinObject) { c.TtlNanos = -int64(time.Second) }), "pin_object.ttl_nanos"},
		{"pin no holder", pin(func(c *fsmpb.PinObject) { c.Holder = "" }), ""},
		{"pin holder too long", pin(func(c *fsmpb.PinObject) { c.Holder += "h" }), "pin_object.holder"},
		{"release ok", cmdRelease(1), ""},
		{"release no id", cmdRelease(0), "release_pin.pin_id"},

		{"report ok", reportOK, ""},
		{"report no key", report(func(c *fsmpb.ReportCandidateFailure) { c.Key = nil }), "report_candidate_failure.key"},
		{"report no stream", report(func(c *fsmpb.ReportCandidateFailure) { c.Key.StreamId = 0 }), "report_candidate_failure.key.stream_id"},
		{"report no view", report(func(c *fsmpb.ReportCandidateFailure) { c.Key.View = 0 }), "report_candidate_failure.key.view"},
		{"report no kind", report(func(c *fsmpb.ReportCandidateFailure) { c.Kind = 0 }), "report_candidate_failure.kind"},
		{"report unknown kind", report(func(c *fsmpb.ReportCandidateFailure) { c.Kind = 5 }), "report_candidate_failure.kind"},
		{"report negative kind", report(func(c *fsmpb.ReportCandidateFailure) { c.Kind = -1 }), "report_candidate_failure.kind"},
		{"report detail too long", report(func(c *fsmpb.ReportCandidateFailure) { c.Detail += "d" }), "report_candidate_failure.detail"},

		{"repair ok", repairOK, ""},
		{"repair no replace", repair(func(c *fsmpb.RepairGen0) { c.Replace = nil }), ""},
		{"repair no stream", repair(func(c *fsmpb.RepairGen0) { c.StreamId = 0 }), "repair_gen0.stream_id"},
		{"repair replace at bound", repair(func(c *fsmpb.RepairGen0) { c.Replace = manyReplace(MaxRepairReplace) }), ""},
		{"repair replace too many", repair(func(c *fsmpb.RepairGen0) { c.Replace = manyReplace(MaxRepairReplace + 1) }), "repair_gen0.replace"},
		{"repair replace nil", repair(func(c *fsmpb.RepairGen0) { c.Replace[1] = nil }), "repair_gen0.replace[1]"},
		{"repair replace unsorted", repair(func(c *fsmpb.RepairGen0) { c.Replace[1].Start = 0 }), "repair_gen0.replace[1]"},
		{"repair no record", repair(func(c *fsmpb.RepairGen0) { c.Record = nil }), "repair_gen0.record"},
		{"repair record empty", repair(func(c *fsmpb.RepairGen0) { c.Record.Range.End = 0 }), "repair_gen0.record.range"},
		{"repair record no object", repair(func(c *fsmpb.RepairGen0) { c.Record.Object = nil }), "repair_gen0.record.object"},
		{"repair record no bytes", repair(func(c *fsmpb.RepairGen0) { c.Record.Bytes = nil }), "repair_gen0.record.bytes"},
		{"repair record survivors", repair(func(c *fsmpb.RepairGen0) { c.Record.Survivors = RangesPB([]Range{{1, 2}}) }), "repair_gen0.record.survivors"},
	}
	cases = append(cases, objCases("register_object", func(o *fsmpb.ObjectRef) *fsmpb.Command {
		return &fsmpb.Command{Op: &fsmpb.Command_RegisterObject{RegisterObject: &fsmpb.RegisterObject{Object: o}}}
	})...)
	cases = append(cases, objCases("pin_object", func(o *fsmpb.ObjectRef) *fsmpb.Command {
		return &fsmpb.Command{Op: &fsmpb.Command_PinObject{PinObject: &fsmpb.PinObject{Object: o, TtlNanos: int64(time.Second)}}}
	})...)
	cases = append(cases, objCases("mark_object_deleting", func(o *fsmpb.ObjectRef) *fsmpb.Command {
		return &fsmpb.Command{Op: &fsmpb.Command_MarkObjectDeleting{MarkObjectDeleting: &fsmpb.MarkObjectDeleting{Object: o}}}
	})...)
	cases = append(cases, objCases("mark_object_deleted", func(o *fsmpb.ObjectRef) *fsmpb.Command {
		return &fsmpb.Command{Op: &fsmpb.Command_MarkObjectDeleted{MarkObjectDeleted: &fsmpb.MarkObjectDeleted{Object: o}}}
	})...)
	cases = append(cases, objCases("commit_append", func(o *fsmpb.ObjectRef) *fsmpb.Command {
		return ca(func(c *fsmpb.CommitAppend) { c.Object = o })
	})...)

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { tc.check(t) })
	}
}

type validateCase struct {
	name  string
	cmd   *fsmpb.Command
	field string // "" means valid
}

func (tc validateCase) check(t *testing.T) {
	rej := Validate(tc.cmd)
	switch {
	case tc.field == "" && rej != nil:
		t.Fatalf("refused %s: %s", rej.Field, rej.Message)
	case tc.field != "" && rej == nil:
		t.Fatalf("accepted, want a refusal of %s", tc.field)
	case tc.field != "" && (rej.Code != fsmpb.RejectCode_INVALID_ARGUMENT || rej.Field != tc.field || rej.Message == ""):
		t.Fatalf("refused %s %s (%q), want INVALID_ARGUMENT %s", rej.Code, rej.Field, rej.Message, tc.field)
	}
	// Apply refuses a malformed command with exactly Validate's rejection,
	// and with nothing changed.
	m := New(WithInvariantChecks())
	before, _, _ := m.StateHash()
	res := m.Apply(1, tc.cmd)
	if tc.field == "" {
		if res.GetRejection().GetCode() == fsmpb.RejectCode_INVALID_ARGUMENT {
			t.Fatalf("Apply refused a valid command: %v", res.Rejection)
		}
		return
	}
	if !proto.Equal(res.Rejection, rej) || res.Version != 1 {
		t.Fatalf("Apply gave %v, Validate %v", res, rej)
	}
	if after, _, _ := m.StateHash(); after != before && tc.cmd.RequestId == "" {
		t.Fatal("a refused command changed the state")
	}
}
