package model

import (
	"fmt"
	"sort"
	"strings"

	"github.com/metad/metad/jepsen/history"
)

// Anomaly is one violation of a guarantee found in a history.
type Anomaly struct {
	Check  string `json:"check"` // G1, G2, G3, G5, G6, G8, G9, G10, G12, G14, G16, converge
	Op     int    `json:"op"`    // history op id, -1 if none
	Stream uint64 `json:"stream,omitempty"`
	Detail string `json:"detail"`
}

func (a Anomaly) String() string {
	return fmt.Sprintf("%s op %d stream %d: %s", a.Check, a.Op, a.Stream, a.Detail)
}

// CheckAll runs every checker that reads the history alone (everything but
// linearizability and convergence).
func CheckAll(h history.History) []Anomaly {
	var out []Anomaly
	out = append(out, CheckMonotone(h)...)
	out = append(out, CheckResolveShapes(h)...)
	out = append(out, CheckData(h)...)
	out = append(out, CheckPins(h)...)
	out = append(out, CheckDurable(h)...)
	out = append(out, CheckWatch(h)...)
	out = append(out, CheckStreamSets(h)...)
	out = append(out, CheckMembership(h)...)
	out = append(out, CheckStore(h)...)
	return out
}

// retryable lists the failure reasons a resolve may end in (G5): retryable
// errors, never a wrong answer. A transport failure decodes as UNAVAILABLE
// or the gRPC code's name.
var retryable = map[string]bool{
	"RESOLVE_UNAVAILABLE": true, "NO_LEADER": true, "NOT_LEADER": true, "NOT_READY": true,
	"LEADERSHIP_LOST": true, "COMMIT_TIMEOUT": true, "SHUTTING_DOWN": true, "OVERLOADED": true,
	"DEADLINE_EXCEEDED": true, "DeadlineExceeded": true, "UNAVAILABLE": true, "Unavailable": true,
	"CANCELLED": true, "Canceled": true,
}

// observation is one value an answer showed, for G3.
type observation struct {
	call, ret int64
	value     uint64
	op        int
	stream    uint64
}

// CheckMonotone is G3: committed end, trim and writer epoch per stream, and
// metadata versions (Raft indices) overall, never go back: an answer never
// shows less than an answer that completed before it was asked.
func CheckMonotone(h history.History) []Anomaly {
	obs := map[string][]observation{}
	add := func(key string, op *history.Op, v uint64) {
		obs[key] = append(obs[key], observation{call: op.Call, ret: op.Return, value: v, op: op.ID, stream: op.Stream})
	}
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.Status != history.OK || op.Out == nil || op.Stream == 0 {
			continue
		}
		out, s := op.Out, fmt.Sprint(op.Stream)
		switch op.Kind {
		case history.KindDescribe:
			add("end/"+s, op, out.CommittedEnd)
			add("trim/"+s, op, out.Trim)
			add("epoch/"+s, op, out.Epoch)
			add("index", op, out.AppliedIndex)
		case history.KindResolve:
			add("end/"+s, op, out.CommittedEnd)
			add("trim/"+s, op, out.Trim)
			if out.AppliedIndex > 0 { // read_index: the resolve's linearization point
				add("index", op, out.AppliedIndex)
			}
		case history.KindAppend:
			add("end/"+s, op, out.CommittedEnd)
			add("index", op, out.Version)
		case history.KindTrim:
			add("trim/"+s, op, out.Trim)
			add("end/"+s, op, out.CommittedEnd)
			add("index", op, out.Version)
		case history.KindOpen:
			add("epoch/"+s, op, out.Epoch)
			add("index", op, out.Version)
		case history.KindPublish, history.KindRetire, history.KindReplace, history.KindRegister, history.KindPin:
			if out.Version > 0 {
				add("index", op, out.Version)
			}
		}
	}
	var out []Anomaly
	keys := make([]string, 0, len(obs))
	for k := range obs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, monotone(k, obs[k])...)
	}
	return out
}

// monotone sweeps observations by call time, tracking the largest value of
// those that returned before the call.
func monotone(key string, obs []observation) []Anomaly {
	byCall := append([]observation(nil), obs...)
	sort.Slice(byCall, func(i, j int) bool { return byCall[i].call < byCall[j].call })
	byRet := append([]observation(nil), obs...)
	sort.Slice(byRet, func(i, j int) bool { return byRet[i].ret < byRet[j].ret })
	var out []Anomaly
	var best observation
	j := 0
	for _, o := range byCall {
		for j < len(byRet) && byRet[j].ret < o.call {
			if byRet[j].value > best.value {
				best = byRet[j]
			}
			j++
		}
		if o.value < best.value && len(out) < 20 {
			out = append(out, Anomaly{Check: "G3", Op: o.op, Stream: o.stream, Detail: fmt.Sprintf(
				"%s went back: %d, after op %d had shown %d", strings.Split(key, "/")[0], o.value, best.op, best.value)})
		}
	}
	return out
}

// CheckResolveShapes is G5/G6 on each resolve answer by itself: one of the
// allowed outcomes, consistent with the ends it reports, in the requested
// view, never a dense range for the sparse view; failures only retryable.
func CheckResolveShapes(h history.History) []Anomaly {
	var out []Anomaly
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.Kind != history.KindResolve {
			continue
		}
		var why string
		switch {
		case op.Status != history.OK:
			if !retryable[op.Reason] {
				why = fmt.Sprintf("resolve failed with %s, which is not retryable: %s", op.Reason, op.Error)
			}
		default:
			why = resolveShape(&op.In, op.Out)
		}
		if why != "" {
			check := "G5"
			if strings.Contains(why, "(G6)") {
				check = "G6"
			}
			out = append(out, Anomaly{Check: check, Op: op.ID, Stream: op.Stream, Detail: why})
		}
	}
	return out
}

func resolveShape(in *history.Input, out *history.Output) string {
	o := in.Offset
	switch out.Outcome {
	case "EOF":
		if o < out.CommittedEnd {
			return fmt.Sprintf("EOF at %d below the committed end %d it reports", o, out.CommittedEnd)
		}
	case "OFFSET_TRIMMED":
		if o >= out.Trim {
			return fmt.Sprintf("OFFSET_TRIMMED at %d at or above the trim %d it reports", o, out.Trim)
		}
	case "VIEW_END":
		if in.View != TopicCompacted {
			return "VIEW_END for the dense COMMITTED view (G6)"
		}
		if out.ViewEnd < o {
			return fmt.Sprintf("VIEW_END %d before the offset %d", out.ViewEnd, o)
		}
	case "NOT_FOUND":
		return "NOT_FOUND for a stream that exists (streams are never deleted here)"
	case "TARGET":
		return targetShape(in, out)
	default:
		return fmt.Sprintf("outcome %q is none of the allowed kinds", out.Outcome)
	}
	return ""
}

func targetShape(in *history.Input, out *history.Output) string {
	t, o := out.Target, in.Offset
	switch {
	case t == nil:
		return "TARGET without a target"
	case t.View != in.View:
		return fmt.Sprintf("target from view %s for a %s request (G6)", t.View, in.View)
	case o < out.Trim || o >= out.CommittedEnd:
		return fmt.Sprintf("target for %d outside [trim %d, end %d) it reports", o, out.Trim, out.CommittedEnd)
	case in.View == Committed && (t.Resolved.Start != o || t.Resolved.End != t.RecordRange.End || !t.RecordRange.Contains(o)):
		return fmt.Sprintf("dense target resolves %v in record %v for offset %d", t.Resolved, t.RecordRange, o)
	case in.View == TopicCompacted && (t.Resolved.Start < o || t.Resolved.Start < t.RecordRange.Start || t.Resolved.End > t.RecordRange.End || t.Resolved.Start >= t.Resolved.End):
		return fmt.Sprintf("sparse target resolves %v in record %v for offset %d", t.Resolved, t.RecordRange, o)
	case t.PinID == 0:
		return "target without a pin (G7)"
	}
	return ""
}

// recordKey names an index record published in the history.
type recordKey struct {
	stream uint64
	view   string
	gen    uint64
	start  uint64
}

// replacements maps each replaced object key to the earliest call time of
// an op that replaced it: registered a new identity under it, which below
// feature level 3 (one version per key) makes records naming the old one
// inadmissible and lets GC collect it. From level 3 a key keeps every
// version, so nothing is replaced and nothing is excused: the map is empty.
// A reupload of the same identity (the local store names same bytes the
// same) replaces nothing.
func replacements(h history.History) map[string]int64 {
	rep := map[string]int64{}
	if h.KeyVersions() {
		return rep
	}
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.Kind != history.KindReplace && op.Kind != history.KindReupload || op.Status == history.Fail || op.In.Object == nil {
			continue
		}
		if op.In.Of != nil && *op.In.Of == *op.In.Object {
			continue
		}
		if t, ok := rep[op.In.Object.Key]; !ok || op.Call < t {
			rep[op.In.Object.Key] = op.Call
		}
	}
	return rep
}

// committedRecord names a record as a writer committed it: gen-0 records
// are appends (view COMMITTED, generation 0), the others published.
type committedRecord struct {
	recordKey
	obj   history.Object
	bytes history.Bytes
}

// committedCRCs maps every record a writer may have committed (acknowledged
// or indeterminate) to the data checksum it sent with it. Two writes of one
// record with the same version and bytes carry the same bytes, so the same
// checksum.
func committedCRCs(h history.History) map[committedRecord]uint32 {
	out := map[committedRecord]uint32{}
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.Status != history.OK && op.Status != history.Info {
			continue
		}
		switch op.Kind {
		case history.KindAppend:
			if op.In.DataCRC != nil && op.In.Object != nil && op.In.Bytes != nil {
				k := committedRecord{recordKey{op.Stream, Committed, 0, op.In.ExpectedStart}, *op.In.Object, *op.In.Bytes}
				out[k] = *op.In.DataCRC
			}
		case history.KindPublish:
			for _, r := range op.In.Records {
				if r.DataCRC != nil {
					out[committedRecord{recordKey{op.Stream, op.In.View, op.In.Generation, r.Range.Start}, r.Object, r.Bytes}] = *r.DataCRC
				}
			}
		}
	}
	return out
}

// CheckData is G8: bytes read under a target's identity are exactly the
// payloads of the offsets the target's record holds, and pass the data
// checksum the record's writer committed (bytes of another version, or
// rotted bytes, fail it); the target carries that checksum (from feature
// level 3 it must carry one). A read that found its bytes failing the
// target's checksum ("corrupt") was right to refuse them, but outside a
// fault that rewrote the object it means the stored bytes are not the
// ones committed. A failed read is allowed only for an object the harness
// replaced (detected, never served) and otherwise means the object vanished
// under a pin (G9). A broker reader's client.Read answers are held to the
// same: every byte it returns must pass the committed checksum.
func CheckData(h history.History) []Anomaly {
	d := dataCheck{h: h, sparse: map[recordKey][]history.Range{}, rep: replacements(h), crcs: committedCRCs(h)}
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.Kind == history.KindPublish && op.In.View == TopicCompacted {
			for _, r := range op.In.Records {
				d.sparse[recordKey{op.Stream, TopicCompacted, op.In.Generation, r.Range.Start}] = r.Survivors
			}
		}
	}
	out := checkEvidenceCRCs(h, d.crcs)
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.Kind != history.KindResolve && op.Kind != history.KindRead || op.Status != history.OK || op.Out.Target == nil || op.Out.Read == nil {
			continue
		}
		out = append(out, d.read(op)...)
	}
	return capPerObject(out, h)
}

// dataCheck is what CheckData knows of the history: the sparse records'
// survivors, the replaced keys, the committed data checksums.
type dataCheck struct {
	h      history.History
	sparse map[recordKey][]history.Range
	rep    map[string]int64
	crcs   map[committedRecord]uint32
}

// read checks one read of a target's bytes (a resolve's, or a broker's).
func (d dataCheck) read(op *history.Op) []Anomaly {
	t, rd := op.Out.Target, op.Out.Read
	bad := func(check, format string, args ...any) Anomaly {
		return Anomaly{Check: check, Op: op.ID, Stream: op.Stream, Detail: fmt.Sprintf(format, args...)}
	}
	var out []Anomaly
	crc, known := d.crcs[committedRecord{recordKey{op.Stream, t.View, t.Generation, t.Start}, t.Object, t.Bytes}]
	if why := targetCRC(t, crc, known, d.h.KeyVersions()); why != "" {
		out = append(out, bad("G8", "%s", why))
	}
	switch {
	case rd.Result == "ok":
	case hidden(d.h.Faults, t.Object.Key, op.Call, rd.At):
		return out // the flapping or corrupt nemesis had it (report.go)
	case rd.Result == "corrupt":
		return append(out, bad("G8", "the bytes of %s under %s failed their data checksum, though no fault rewrote them: %s",
			t.Object.Key, t.Object.Identity, rd.Detail))
	default:
		if why := lostUnderPin(t.Object.Key, *rd, op.Call+t.PinTTL*9/10, d.rep); why != "" {
			out = append(out, bad("G9", "%s", why))
		}
		return out
	}
	want := Payloads(op.Stream, []history.Range{t.RecordRange})
	if t.View == TopicCompacted {
		surv, ok := d.sparse[recordKey{op.Stream, t.View, t.Generation, t.Start}]
		if !ok {
			return append(out, bad("G8", "target names sparse record g%d/%d that was never published", t.Generation, t.Start))
		}
		want = Payloads(op.Stream, surv)
	}
	got := DataCRC([]byte(op.Out.Data))
	switch {
	case op.Out.Data != want:
		out = append(out, bad("G8", "read %q under %s, the record's offsets hold %q%s", clip(op.Out.Data), t.Object.Identity, clip(want), crcNote(got, crc, known)))
	case known && got != crc:
		out = append(out, bad("G8", "read bytes under %s with CRC-32C %08x; the writer committed crc32c:%08x", t.Object.Identity, got, crc))
	}
	return out
}

// perObject bounds the data anomalies reported per object: a corrupted
// object read a hundred times is one finding, shown by its first reads.
const perObject = 5

// capPerObject keeps the first perObject G8 anomalies of each object's
// reads and says how many more there were.
func capPerObject(as []Anomaly, h history.History) []Anomaly {
	key := map[int]string{}
	for i := range h.Ops {
		if op := &h.Ops[i]; (op.Kind == history.KindResolve || op.Kind == history.KindRead) && op.Out != nil && op.Out.Target != nil {
			key[op.ID] = op.Out.Target.Object.Key
		}
	}
	seen := map[string]int{}
	var out []Anomaly
	for _, a := range as {
		k, ok := key[a.Op]
		if a.Check == "G8" && ok {
			if seen[k]++; seen[k] > perObject {
				continue
			}
		}
		out = append(out, a)
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if n := seen[k]; n > perObject {
			out = append(out, Anomaly{Check: "G8", Op: -1, Detail: fmt.Sprintf("%d more reads of %s as above", n-perObject, k)})
		}
	}
	return out
}

// checkEvidenceCRCs checks the final append evidence keeps the data
// checksum each append's writer committed (from feature level 3 it must
// keep one).
func checkEvidenceCRCs(h history.History, crcs map[committedRecord]uint32) []Anomaly {
	var out []Anomaly
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.Kind != history.KindEvidence || op.Status != history.OK || op.Out == nil {
			continue
		}
		for _, e := range op.Out.Evidence {
			if e.Bytes == nil {
				continue
			}
			crc, known := crcs[committedRecord{recordKey{op.Stream, Committed, 0, e.Range.Start}, e.Object, *e.Bytes}]
			var why string
			switch {
			case !known:
			case e.DataCRC == nil && h.KeyVersions():
				why = fmt.Sprintf("evidence %v of %s keeps no data checksum; its writer committed crc32c:%08x", e.Range, e.Object.Key, crc)
			case e.DataCRC != nil && *e.DataCRC != crc:
				why = fmt.Sprintf("evidence %v of %s keeps data checksum crc32c:%08x; its writer committed crc32c:%08x", e.Range, e.Object.Key, *e.DataCRC, crc)
			}
			if why != "" && len(out) < 20 {
				out = append(out, Anomaly{Check: "G8", Op: op.ID, Stream: op.Stream, Detail: why})
			}
		}
	}
	return out
}

// targetCRC checks a target's data checksum against the one its record's
// writer committed (known: the history holds the write).
func targetCRC(t *history.Target, crc uint32, known, versions bool) string {
	switch {
	case !known:
		return ""
	case t.DataCRC == nil && versions:
		return fmt.Sprintf("target g%d/%d of %s carries no data checksum; its writer committed crc32c:%08x", t.Generation, t.Start, t.Object.Key, crc)
	case t.DataCRC != nil && *t.DataCRC != crc:
		return fmt.Sprintf("target g%d/%d of %s carries data checksum crc32c:%08x; its writer committed crc32c:%08x", t.Generation, t.Start, t.Object.Key, *t.DataCRC, crc)
	}
	return ""
}

func crcNote(got, crc uint32, known bool) string {
	if !known {
		return ""
	}
	return fmt.Sprintf(" (CRC-32C %08x; the writer committed crc32c:%08x)", got, crc)
}

// lostUnderPin explains a failed read of a pinned object, or returns "" if
// it is allowed: the harness replaced the key before, or the read came
// after the lease (leaseEnd, on the client's clock).
func lostUnderPin(key string, w history.Watch, leaseEnd int64, rep map[string]int64) string {
	if t, ok := rep[key]; ok && t <= w.At {
		return ""
	}
	switch w.Result {
	case "missing", "mismatch":
		if w.At < leaseEnd {
			return fmt.Sprintf("object %s unreadable (%s) while pinned: %s", key, w.Result, w.Detail)
		}
	}
	return ""
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// CheckPins is G9 for explicit pins: the harness pinned an object, let it
// become unreferenced, and kept reading it until the lease ended.
func CheckPins(h history.History) []Anomaly {
	rep := replacements(h)
	var out []Anomaly
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.Kind != history.KindPin || op.Status != history.OK || op.Out == nil {
			continue
		}
		for _, w := range op.Out.Watches {
			if hidden(h.Faults, op.In.Object.Key, w.At-readWindow, w.At) {
				continue // the flapping nemesis hid it (report.go)
			}
			if why := lostUnderPin(op.In.Object.Key, w, op.Call+op.In.TTLNanos*9/10, rep); why != "" {
				out = append(out, Anomaly{Check: "G9", Op: op.ID, Stream: op.Stream, Detail: why})
				break
			}
		}
	}
	return out
}
