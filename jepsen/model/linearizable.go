package model

import (
	"fmt"
	"io"
	"math"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/metad/metad/jepsen/history"
)

// Porcupine is the model of G1 for porcupine: one Stream per partition
// (operations on different streams commute), inputs and outputs are the
// history's *Op; a cluster with one version per key.
var Porcupine = PorcupineAt(false)

// PorcupineAt is Porcupine for a cluster that keeps many versions per key
// (versions, feature level 3) or one.
func PorcupineAt(versions bool) porcupine.Model {
	return porcupine.Model{
		Partition: partitionByStream,
		Init:      func() interface{} { return NewStreamAt(0, versions) },
		Step: func(state, input, _ interface{}) (bool, interface{}) {
			s, op := state.(Stream), input.(*history.Op)
			if s.ID == 0 {
				s.ID = op.Stream // Init cannot know its partition's stream
			}
			ok, next, _ := Step(s, op)
			return ok, next
		},
		Equal: func(a, b interface{}) bool {
			x, y := a.(Stream), b.(Stream)
			return x.digest == y.digest && x.End == y.End && x.Trim == y.Trim && x.Epoch == y.Epoch
		},
		Hash:              func(s interface{}) uint64 { return s.(Stream).digest },
		DescribeOperation: func(input, _ interface{}) string { return Describe(input.(*history.Op)) },
		DescribeState:     func(s interface{}) string { return s.(Stream).String() },
	}
}

func partitionByStream(ops []porcupine.Operation) [][]porcupine.Operation {
	byStream := map[uint64][]porcupine.Operation{}
	var ids []uint64
	for _, o := range ops {
		id := o.Input.(*history.Op).Stream
		if _, ok := byStream[id]; !ok {
			ids = append(ids, id)
		}
		byStream[id] = append(byStream[id], o)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	out := make([][]porcupine.Operation, len(ids))
	for i, id := range ids {
		out[i] = byStream[id]
	}
	return out
}

// Operations turns a history into porcupine operations. Definite failures
// observed nothing and are left out; a mutation whose outcome is unknown
// returns "never" (after every other operation), so porcupine may place it
// anywhere after its call — or at the very end, where it changes nothing
// anyone saw. A resolve's target was pinned, then rechecked (G7),
// so its linearization point lies after the pin was applied: the leader's
// machine time at that apply (pin expiry minus TTL) narrows its call time,
// unless a clock offset made machine time differ from the wall clock.
func Operations(h history.History) []porcupine.Operation {
	var last int64
	for _, op := range h.Ops {
		last = max(last, op.Return)
	}
	never := last + int64(time.Second)
	var out []porcupine.Operation
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.Kind == history.KindRegister || op.Kind == history.KindPin || op.Kind == history.KindWatch ||
			op.Kind == history.KindEvidence || op.Kind == history.KindRead || op.Stream == 0 {
			continue
		}
		call, ret := op.Call, op.Return
		switch {
		case op.Status == history.Fail:
			continue
		case !op.IsWrite() && op.Status != history.OK:
			continue
		case op.Status == history.Info:
			ret = never
		}
		if t := pinnedTarget(op); t != nil && !skewed(h.Faults, op) && t.PinStamp > call && t.PinStamp <= ret {
			call = t.PinStamp
		}
		out = append(out, porcupine.Operation{ClientId: op.Client, Input: op, Output: op, Call: call, Return: ret})
	}
	return out
}

// pinnedTarget returns the target whose pin this resolve took itself. A
// shared pin (Target.pin_shared) is a longer lease another resolve may
// have taken: its expiry minus pin_ttl is not when it was applied, so it
// cannot narrow anything.
func pinnedTarget(op *history.Op) *history.Target {
	if op.Kind != history.KindResolve || op.Out == nil || op.Out.Target == nil || op.Out.Target.PinShared {
		return nil
	}
	return op.Out.Target
}

// skewed reports whether machine time may have differed from the wall
// clock while op ran: from a clock fault's start until its heal plus the
// largest offset (machine time never goes back, so it stays ahead until
// the wall clock catches up).
func skewed(faults []history.Fault, op *history.Op) bool {
	for _, f := range faults {
		if f.Kind != "clock" {
			continue
		}
		end := f.End
		if end == 0 {
			return op.Return >= f.Start
		}
		if op.Return >= f.Start && op.Call <= end+f.MaxSkew {
			return true
		}
	}
	return false
}

// Linearizability is the outcome of the porcupine check.
type Linearizability struct {
	Result porcupine.CheckResult
	Info   porcupine.LinearizationInfo
	// Versions: the history was checked with many versions per key.
	Versions bool
	// Anomalies explains each partition that is not linearizable.
	Anomalies []Anomaly
}

// CheckLinearizable runs porcupine with a timeout.
func CheckLinearizable(h history.History, timeout time.Duration) Linearizability {
	ops := Operations(h)
	res, info := porcupine.CheckOperationsVerbose(PorcupineAt(h.KeyVersions()), ops, timeout)
	l := Linearizability{Result: res, Info: info, Versions: h.KeyVersions()}
	if res == porcupine.Illegal {
		l.Anomalies = explain(partitionByStream(ops), info.PartialLinearizationsOperations(), h.KeyVersions())
	}
	return l
}

// explain names, for each partition porcupine could not linearize, the
// operation that blocks its longest linearizable prefix: of the operations
// left out, the one that returned first (everything called after it must
// follow it), with the model's reason in the state after the prefix.
func explain(parts [][]porcupine.Operation, partials [][][]porcupine.Operation, versions bool) []Anomaly {
	var out []Anomaly
	for p, part := range parts {
		var longest []porcupine.Operation
		for _, l := range partials[p] {
			if len(l) > len(longest) {
				longest = l
			}
		}
		if len(longest) == len(part) {
			continue
		}
		stream := part[0].Input.(*history.Op).Stream
		s := NewStreamAt(stream, versions)
		in := map[int]bool{}
		for _, o := range longest {
			op := o.Input.(*history.Op)
			in[op.ID] = true
			_, s, _ = Step(s, op)
		}
		var block *history.Op
		var blockRet int64
		for _, o := range part {
			op := o.Input.(*history.Op)
			if !in[op.ID] && (block == nil || o.Return < blockRet) {
				block, blockRet = op, o.Return
			}
		}
		_, _, why := Step(s, block)
		if why == "" {
			why = "it fits this state, but then an operation that must follow it does not"
		}
		out = append(out, Anomaly{Check: "G1", Op: block.ID, Stream: stream, Detail: fmt.Sprintf(
			"not linearizable: after %d of %d operations, op %d (%s, client %d, node %s) fits no order; in state {%v}: %s",
			len(longest), len(part), block.ID, Describe(block), block.Client, block.Node, s, why)})
	}
	return out
}

// Visualize writes porcupine's HTML visualisation with the faults shaded.
func Visualize(l Linearizability, faults []history.Fault, w io.Writer) error {
	var ann []porcupine.Annotation
	for _, f := range faults {
		end := f.End
		if end == 0 {
			end = math.MaxInt64 / 2
		}
		ann = append(ann, porcupine.Annotation{Tag: "nemesis", Start: f.Start, End: end,
			Description: f.Kind + ":" + f.Shape, Details: fmt.Sprintf("%v %s", f.Targets, f.Detail), BackgroundColor: "#fde2e2"})
	}
	l.Info.AddAnnotations(ann)
	return porcupine.Visualize(PorcupineAt(l.Versions), l.Info, w)
}

// Describe is a one-line description of an operation.
func Describe(op *history.Op) string {
	in, out := &op.In, op.Out
	var s string
	switch op.Kind {
	case history.KindAppend:
		s = fmt.Sprintf("append [%d,%d) e%d", in.ExpectedStart, in.End, in.Epoch)
	case history.KindTrim:
		s = fmt.Sprintf("trim %d", in.Offset)
	case history.KindPublish:
		s = fmt.Sprintf("publish %s g%d %v recs=%d complete=%v", in.View, in.Generation, in.Coverage, len(in.Records), in.Complete)
	case history.KindRetire:
		s = fmt.Sprintf("retire %s g%d", in.View, in.Generation)
	case history.KindResolve:
		s = fmt.Sprintf("resolve %s %d", in.View, in.Offset)
	default:
		s = op.Kind
	}
	switch {
	case op.Status != history.OK:
		return fmt.Sprintf("%s -> %s %s", s, op.Status, op.Reason)
	case out == nil:
		return s + " -> ok"
	case op.Kind == history.KindDescribe:
		return fmt.Sprintf("%s -> end=%d trim=%d epoch=%d gens=%d", s, out.CommittedEnd, out.Trim, out.Epoch, len(out.Generations))
	case op.Kind == history.KindResolve && out.Target != nil:
		t := out.Target
		return fmt.Sprintf("%s -> TARGET %s/g%d/%d%v resolved %v", s, t.View, t.Generation, t.Start, t.RecordRange, t.Resolved)
	case op.Kind == history.KindResolve:
		return fmt.Sprintf("%s -> %s (trim %d end %d view_end %d)", s, out.Outcome, out.Trim, out.CommittedEnd, out.ViewEnd)
	}
	return s + " -> ok"
}
