package model

import (
	"strings"
	"testing"
	"time"

	"github.com/metad/metad/jepsen/history"
)

func reportOp(key, kind string, isFalse, confirmed bool) history.Op {
	return history.Op{Kind: history.KindReport, In: history.Input{Report: &history.Report{Kind: kind, False: isFalse,
		Candidate: history.Candidate{View: Committed, Generation: 1, Start: 0, Version: 7}, Object: history.Object{Key: key, Identity: "sha256:r"}}},
		Out: &history.Output{Report: &history.Verdict{Confirmed: confirmed, Quarantined: confirmed, Verdict: "v"}}}
}

// TestFalseReportConfirmedIsAnAnomaly: a confirmed false report on bytes
// the reporter read intact is G10, unless the harness had hidden the
// object (flapping) or replaced its key by then.
func TestFalseReportConfirmedIsAnAnomaly(t *testing.T) {
	for _, kind := range []string{"CORRUPT", "OBJECT_MISSING", "IDENTITY_MISMATCH"} {
		var b builder
		b.add(reportOp("k", kind, true, false), 10, 20)
		if a := CheckReports(b.h); len(a) != 0 {
			t.Fatalf("%s: unconfirmed false report reported: %v", kind, a)
		}
		b.h.Ops[0].Out.Report.Confirmed = true
		a := CheckReports(b.h)
		if len(a) != 1 || a[0].Check != "G10" || !strings.Contains(a[0].Detail, kind) {
			t.Fatalf("%s: confirmed false report not reported: %v", kind, a)
		}
		// The object was hidden while the report was checked: confirming
		// it was right.
		b.h.Faults = []history.Fault{{Kind: "flapping", Start: 15, End: 30, Object: &history.Object{Key: "k"}}}
		if a := CheckReports(b.h); len(a) != 0 {
			t.Fatalf("%s: report on a hidden object reported: %v", kind, a)
		}
		// Hidden only after the answer: no excuse.
		b.h.Faults[0].Start = 21
		if a := CheckReports(b.h); len(a) != 1 {
			t.Fatalf("%s: a later hiding excused the report: %v", kind, a)
		}
		// The key replaced before the answer: the old version may be gone.
		b.add(history.Op{Kind: history.KindReplace, In: history.Input{Object: &history.Object{Key: "k", Identity: "sha256:new"}}}, 12, 13)
		if a := CheckReports(b.h); len(a) != 0 {
			t.Fatalf("%s: report after a replacement reported: %v", kind, a)
		}
	}
	var b builder
	b.add(reportOp("k", "OBJECT_MISSING", false, true), 10, 20) // the nemesis's true report
	if a := CheckReports(b.h); len(a) != 0 {
		t.Fatalf("a true report reported: %v", a)
	}
}

// TestQuarantineMustHeal: a record still quarantined at the end, with
// intact bytes, is G12; only a replaced key's record may stay; a listing
// that failed cannot show healing.
func TestQuarantineMustHeal(t *testing.T) {
	listing := func(keys ...string) history.Op {
		op := history.Op{Kind: history.KindQuarantine, Status: history.OK, Final: true, Out: &history.Output{}}
		for _, k := range keys {
			op.Out.Quarantined = append(op.Out.Quarantined, history.Quarantined{Stream: 1, Object: history.Object{Key: k},
				Candidate: history.Candidate{View: Committed, Generation: 0, Start: 4, Version: 9}, Range: history.Range{Start: 4, End: 6}})
		}
		return op
	}
	var b builder
	b.add(listing(), 50, 51)
	b.h.Ops[0].Stream = 0
	if a := CheckQuarantine(b.h); len(a) != 0 {
		t.Fatalf("empty listing reported: %v", a)
	}
	b.h.Ops[0] = listing("intact")
	a := CheckQuarantine(b.h)
	if len(a) != 1 || a[0].Check != "G12" || !strings.Contains(a[0].Detail, "intact") {
		t.Fatalf("record left quarantined not reported: %v", a)
	}
	b.add(history.Op{Kind: history.KindReplace, In: history.Input{Object: &history.Object{Key: "intact", Identity: "sha256:new"}}}, 1, 2)
	if a := CheckQuarantine(b.h); len(a) != 0 {
		t.Fatalf("replaced key's record reported: %v", a)
	}
	b.h.Ops[0].Status, b.h.Ops[0].Out, b.h.Ops[0].Error = history.Fail, nil, "unavailable"
	if a := CheckQuarantine(b.h); len(a) != 1 || !strings.Contains(a[0].Detail, "failed") {
		t.Fatalf("failed listing not reported: %v", a)
	}
}

// TestIntactOffsetsMustReadBack: every committed offset above the final
// trim is read back at the end, acknowledged or not (an indeterminate
// append that took effect counts too); only replaced bytes are exempt.
func TestIntactOffsetsMustReadBack(t *testing.T) {
	finalRead := func(r history.Range) history.Op {
		return history.Op{Kind: history.KindResolve, Final: true, In: history.Input{View: Committed, Offset: r.Start},
			Out: &history.Output{Outcome: "TARGET", CommittedEnd: 6, Target: &history.Target{View: Committed, Stream: 1, Resolved: r},
				Read: &history.Watch{Result: "ok"}}}
	}
	var b builder
	b.add(appendOp(0, 2), 0, 1)
	info := appendOp(2, 6)
	info.Status, info.Out = history.Info, nil
	b.add(info, 2, 3)
	d := describeOp(6, 1)
	d.Final = true
	b.add(d, 10, 11)
	b.add(finalRead(history.Range{Start: 1, End: 2}), 12, 13)
	b.add(finalRead(history.Range{Start: 2, End: 4}), 14, 15)
	a := CheckIntact(b.h)
	if len(a) != 1 || a[0].Check != "G10" || !strings.Contains(a[0].Detail, "committed offset 4") || !strings.Contains(a[0].Detail, "2 such") {
		t.Fatalf("unread offsets 4 and 5 (of an indeterminate append) not reported: %v", a)
	}
	b.add(history.Op{Kind: history.KindReplace, In: history.Input{Object: info.In.Object}}, 4, 5)
	if a := CheckIntact(b.h); len(a) != 0 {
		t.Fatalf("replaced offsets reported: %v", a)
	}
	b.h.Ops = b.h.Ops[:len(b.h.Ops)-1]
	b.add(finalRead(history.Range{Start: 4, End: 6}), 16, 17)
	if a := CheckIntact(b.h); len(a) != 0 {
		t.Fatalf("complete read-back reported: %v", a)
	}
}

// TestConfirmedReportMakesTheRecordOptional: the newest candidate may be
// passed over only once a confirmed report may have quarantined it; an
// unconfirmed report changes nothing (G7 stays strict).
func TestConfirmedReportMakesTheRecordOptional(t *testing.T) {
	var b builder
	b.add(openOp(), 0, 1)
	a := appendOp(0, 10)
	b.add(a, 2, 3)
	c := history.Record{Range: history.Range{Start: 0, End: 10}, Object: history.Object{Key: "r", Identity: "sha256:r"}, Bytes: history.Bytes{Length: 9}}
	c.Checksum = Checksum(1, Committed, 1, c.Range, nil, c.Object, c.Bytes, nil)
	b.add(history.Op{Kind: history.KindPublish, In: history.Input{Epoch: 1, View: Committed, Generation: 1,
		Coverage: &history.Range{Start: 0, End: 10}, Records: []history.Record{c}, Complete: true}, Out: &history.Output{Generation: 1}}, 4, 5)
	report := b.add(reportOp("r", "OBJECT_MISSING", false, false), 6, 7)
	report.In.Report.Candidate = history.Candidate{View: Committed, Generation: 1, Start: 0, Version: 3}
	b.add(history.Op{Kind: history.KindResolve, In: history.Input{View: Committed, Offset: 3},
		Out: &history.Output{Outcome: "TARGET", CommittedEnd: 10, Target: &history.Target{View: Committed, Stream: 1,
			RecordRange: history.Range{Start: 0, End: 10}, Resolved: history.Range{Start: 3, End: 10}, Object: *a.In.Object, Bytes: *a.In.Bytes, PinID: 1,
			Checksum: Checksum(1, Committed, 0, history.Range{Start: 0, End: 10}, nil, *a.In.Object, *a.In.Bytes, nil)}}}, 8, 9)
	if l := CheckLinearizable(b.h, time.Minute); l.Result != "Illegal" {
		t.Fatalf("generation 0 over the newest generation accepted after an unconfirmed report: %v", l.Result)
	}
	b.h.Ops[3].Out.Report.Confirmed = true
	if l := CheckLinearizable(b.h, time.Minute); l.Result != "Ok" {
		t.Fatalf("passing over a reported, confirmed record refused: %v %v", l.Result, l.Anomalies)
	}
	// The resolve before the report could not pass the record over.
	b.h.Ops[4].Call, b.h.Ops[4].Return = 6, 7
	b.h.Ops[3].Call, b.h.Ops[3].Return = 8, 9
	if l := CheckLinearizable(b.h, time.Minute); l.Result != "Illegal" {
		t.Fatalf("a record passed over before any report accepted: %v", l.Result)
	}
}

// TestHiddenObjectReadsMayFail: a read that fails while the flapping
// nemesis hides the object is no G9 anomaly; the same failure outside the
// fault is.
func TestHiddenObjectReadsMayFail(t *testing.T) {
	var d builder
	d.add(history.Op{Kind: history.KindResolve, In: history.Input{View: Committed, Offset: 1}, Out: &history.Output{Outcome: "TARGET",
		CommittedEnd: 3, Target: &history.Target{View: Committed, RecordRange: history.Range{Start: 0, End: 2}, Object: history.Object{Key: "h"},
			Resolved: history.Range{Start: 1, End: 2}, PinID: 1, PinTTL: int64(time.Minute)}, Read: &history.Watch{Result: "missing", At: 30}}}, 20, 31)
	if a := CheckData(d.h); len(a) != 1 || a[0].Check != "G9" {
		t.Fatalf("object gone under a pin not reported: %v", a)
	}
	d.h.Faults = []history.Fault{{Kind: "flapping", Start: 25, End: 40, Object: &history.Object{Key: "h"}}}
	if a := CheckData(d.h); len(a) != 0 {
		t.Fatalf("read of a hidden object reported: %v", a)
	}
	d.h.Faults[0].Object.Key = "other"
	if a := CheckData(d.h); len(a) != 1 {
		t.Fatalf("hiding another object excused the read: %v", a)
	}
}
